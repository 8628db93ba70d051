/**
 * `lever beams` and `lever rollouts` end to end on a simulated workspace, as a user runs them:
 * beams → `lever train sft` → rollouts from the checkpoint → Lever-Plus export → import.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { loadCheckpoint } from "../../src/selector/checkpoint.js";
import { readBeamSet, readRolloutSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
import { type DatagenWorkspace, datagenWorkspace } from "./helpers.js";

let w: DatagenWorkspace;
let checkpoint: string;

// The commands the tests run (and rerun, to see the run resume).
const beamsCommand = () => [
  ...["beams", "--dataset", "train", "--pools", "p", "--anchors", "random:40", "--shots", "2"],
  ...["--beam-size", "3", "--budget", "6", "--out", "b", ...w.worldFlag],
];
const rolloutsCommand = () => [
  ...["rollouts", "--dataset", "train", "--pools", "p", "--queries", "first:12"],
  ...["--checkpoint", checkpoint, "--out", "r", ...w.worldFlag],
];

beforeAll(async () => {
  w = await datagenWorkspace();
  const beams = JSON.parse(await runCliOk(w.args(...beamsCommand(), "--json", "--quiet")));
  expect(beams.artifact.path).toBe("beams/b.json");
  const sft = JSON.parse(
    await runCliOk(
      w.args(
        "train",
        "sft",
        "--beams",
        "b",
        "--pools",
        "p",
        "--dataset",
        "train",
        "--epochs",
        "2",
        "--quiet",
        "--json",
      ),
    ),
  );
  checkpoint = sft.bestCheckpoint;
});

describe("lever beams (CLI)", () => {
  it("refuses a run another process holds, and leaves that run's records alone", async () => {
    const other = Workspace.open(w.ws.dir);
    try {
      const run = other.listRuns({ kind: "beams" }).at(-1)!;
      other.holdRun(run.id);
      const refused = await runCli(w.args(...beamsCommand(), "--quiet"));
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim()).toMatch(new RegExp(`^error: .*run ${run.id} is in use by process ${process.pid}@`));
      expect(other.getStage(run.id, "beams")?.status).toBe("done");
      expect(other.getRun(run.id)?.status).toBe(run.status);
    } finally {
      other.close();
    }
  });

  it("prints a summary with the artefact, the calls and the statistics, and records the settings", async () => {
    const result = await runCli(w.args(...beamsCommand()));
    expect(result.code).toBe(0);
    // A rerun of the same command resumes the same run: nothing to search, no VLM call.
    expect(result.stderr).toMatch(
      /run beams-\d+ \(resumed\): 40 anchors, 40 already stored, 0 searched, 0 failed; .*VLM: 0 calls/,
    );
    // Budget 6 of K = 12: 1 + 6 + 3 × 6 scored answers per anchor.
    expect(result.stdout).toMatch(
      /^wrote artifacts\/beams\/b.json: beams of 40 anchors \(25\.0 scored answers per anchor\); best beam's InfoScore mean [\d.]+ \(min -?[\d.]+, max [\d.]+\) over log P\(answer \| no demonstrations\) mean -[\d.]+\n$/,
    );
    const set = readBeamSet(w.ws, "b");
    expect(set.search).toMatchObject({
      budget: 6,
      beamSize: 3,
      shots: 2,
      prior: { embedding: "joint" },
      anchors: "random:40",
    });
    expect(Object.keys(set.queries)).toHaveLength(40);
  });

  it("exports the beams to the Lever-Plus JSON", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "lever-beams-")), "beams.json");
    expect(await runCliOk(w.args("data", "export-beams", "b", "--out", file))).toContain("of 40 queries");
  });

  it("refuses --out NAME --replace of an artefact a run read before any VLM work, as rollouts does", async () => {
    const runs = (kind: string) => w.ws.listRuns({ kind }).length;
    const before = runs("beams");
    // beams/b.json is the SFT run's input (beforeAll); other anchors would be a new search.
    const refused = await runCli(
      w.args(...beamsCommand().map((a) => (a === "random:40" ? "random:41" : a)), "--replace", "--quiet"),
    );
    expectUserError(
      refused,
      /beams\/b\.json: artefact is an input of run sft-\d+, so it is never replaced; write under another name \(--out\)/,
    );
    expect(runs("beams")).toBe(before);

    mkdirSync(w.ws.artifactPath("rollouts"), { recursive: true });
    writeFileSync(w.ws.artifactPath("rollouts/read.json"), "{}");
    const reader = w.ws.createRun({ kind: "rce", config: { reads: "rollouts/read.json" }, seed: 1 });
    w.ws.recordRunInputs(reader, [{ path: "rollouts/read.json", sha256: "0".repeat(64) }]);
    w.ws.finishRun(reader, "done");
    const rollouts = await runCli(
      w.args(...rolloutsCommand().map((a) => (a === "r" ? "read" : a)), "--replace", "--quiet"),
    );
    expectUserError(
      rollouts,
      new RegExp(`rollouts/read\\.json: artefact is an input of run ${reader}, so it is never replaced`),
    );
    expect(runs("rollouts")).toBe(0);
  });

  it("reports bad settings as one line naming the flag", async () => {
    expectUserError(
      await runCli(
        w.args("beams", "--dataset", "train", "--pools", "p", "--shots", "13", "--out", "x", ...w.worldFlag),
      ),
      'field "shots": must be an integer in [1, K = 12], got 13',
    );
    expectUserError(
      await runCli(w.args("beams", "--dataset", "val", "--pools", "p", "--out", "x", ...w.worldFlag)),
      'pool set "p" holds pools of dataset "train", not "val"',
    );
    expectUserError(
      await runCli(
        w.args("beams", "--dataset", "train", "--pools", "p", "--anchors", "first:9999", "--out", "x", ...w.worldFlag),
      ),
      "first:9999 asks for more than the 300 items that have a pool",
    );
  });
});

describe("lever rollouts (CLI)", () => {
  it("proposes from the checkpoint and retrieval/random, and round-trips through the Lever-Plus RL JSON losslessly", async () => {
    const out = await runCliOk(w.args(...rolloutsCommand(), "--json", "--quiet"));
    const summary = JSON.parse(out);
    expect(summary.artifact.path).toBe("rollouts/r.json");
    expect(Object.keys(summary.stats.methods).sort()).toEqual(["beam", "greedy", "random", "retrieval", "sample"]);
    expect(summary.stats.methods.greedy).toBe(12);
    expect(summary.vlm.calls).toBeGreaterThan(0);
    const set = readRolloutSet(w.ws, "r");
    expect(set.promptOrder).toBe("nearest"); // the beams' order, recorded in the checkpoint
    for (const query of Object.values(set.queries)) {
      const keys = query.trajectories.map((t) => t.positions!.join(","));
      expect(new Set(keys).size).toBe(keys.length);
      for (const t of query.trajectories) {
        expect(t.logprobScore).toBeLessThan(0);
        expect(t.gtLogprob).toBeLessThanOrEqual(0);
        expect(t.vqaGtProb).toBeGreaterThanOrEqual(0);
        expect(t.vqaGtProb).toBeLessThanOrEqual(1);
      }
    }
    expect(set.meta?.stats).toEqual(summary.stats);

    const file = join(mkdtempSync(join(tmpdir(), "lever-rl-")), "rl_data.json");
    await runCliOk(w.args("data", "export-rollouts", "r", "--out", file));
    await runCliOk(w.args("data", "import-rollouts", file, "--dataset", "train", "--out", "r-back"));
    const { source, ...back } = readRolloutSet(w.ws, "r-back");
    expect(source?.format).toBe("leverplus.rl_data");
    expect(back).toEqual(set);

    const again = await runCli(w.args(...rolloutsCommand()));
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/\(resumed\): 12 queries, 12 already stored, 0 rolled out; VLM: 0 calls/);
    expect(again.stdout).toMatch(
      /trajectories per query: min \d+, mean [\d.]+, max \d+\nmethods: beam \d+, greedy 12, random \d+/,
    );
  });

  it("in a copied (moved) workspace the same command finds the done run and assembles the same bytes", async () => {
    await runCliOk(w.args(...rolloutsCommand()));
    const copy = join(mkdtempSync(join(tmpdir(), "lever-rollouts-moved-")), "ws");
    cpSync(w.ws.dir, copy, { recursive: true });
    const moved = rolloutsCommand().map((arg) => arg.replace(w.ws.dir, copy));
    const again = await runCli(["--workspace", copy, ...moved]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/\(resumed\): 12 queries, 12 already stored, 0 rolled out/);
    const file = join("artifacts", "rollouts", "r.json");
    expect(readFileSync(join(copy, file)).equals(readFileSync(join(w.ws.dir, file)))).toBe(true);
    expect(readFileSync(join(copy, file), "utf8")).not.toContain(w.ws.dir);
  });

  it("refuses, before any VLM work, an embedding kind or a pool set the checkpoint was not trained with", async () => {
    // The SFT checkpoint records what it was trained with: joint embeddings (the default) on pool set p (mix).
    expect(loadCheckpoint(checkpoint).provenance.notes).toMatchObject({ embedding: "joint", poolSampler: "mix" });
    expectUserError(
      await runCli(w.args(...rolloutsCommand(), "--embedding", "text", "--out", "r-text")),
      /^error: .*best\.safetensors, field "provenance\.notes\.embedding": the selector was trained on "joint" embeddings, not "text" \(--embedding\)/,
    );
    await runCliOk(
      w.args(...["pools", "--queries", "train", "--index", "train", "--sampler", "random"], "--out", "p-random"),
    );
    const other = rolloutsCommand().map((arg) => (arg === "p" ? "p-random" : arg === "r" ? "r-random" : arg));
    const refused = await runCli(w.args(...other));
    expectUserError(
      refused,
      /^error: .*best\.safetensors, field "provenance\.notes\.poolSampler": the selector was trained on "mix" pools, not "random" \(--pools p-random\)/,
    );
    expect(w.ws.listRuns({ kind: "rollouts" }).filter((r) => JSON.stringify(r.config).includes("r-random"))).toEqual(
      [],
    );
  });

  it("without a checkpoint proposes retrieval and random only, and says so", async () => {
    const result = await runCli(
      w.args(
        "rollouts",
        "--dataset",
        "train",
        "--pools",
        "p",
        "--queries",
        "first:4",
        "--retrieval",
        "2",
        "--random",
        "3",
        "--out",
        "plain",
        ...w.worldFlag,
      ),
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      "note: no --checkpoint: proposing similarity retrieval and random trajectories only",
    );
    expect(result.stdout).toMatch(/methods: random 12, retrieval 12\n/);
  });
});
