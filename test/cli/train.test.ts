import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCheckpoint, saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { writePoolSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { SftConfigSchema } from "../../src/train/stage/sft-run.js";
import { resumeSftStage, runSftStage } from "../../src/train/stage/sft-stage.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
import { crashingProgress } from "../helpers/crash.js";
import { syntheticWorkspace, syntheticWorld } from "../train/synthetic.js";

const dir = mkdtempSync(join(tmpdir(), "lever-train-cli-"));
const wsDir = join(dir, "ws");
const world = syntheticWorld({ seed: 2, queries: 60, perConcept: 8, concepts: 6, d: 8, K: 8, noise: 0.05 });
syntheticWorkspace(dir, wsDir, world);
writeFileSync(join(dir, "beams.json"), JSON.stringify(world.beams));
writeFileSync(join(dir, "pools.json"), JSON.stringify(world.pools));

const runTrainCli = (args: string[]) => runCli(["--workspace", wsDir, "train", ...args]);
/** `lever --workspace WS train …`, which must succeed; returns what it printed. */
const run = (args: string[]) => runCliOk(["--workspace", wsDir, "train", ...args]);

const base = [
  "sft",
  "--beams",
  join(dir, "beams.json"),
  "--pools",
  join(dir, "pools.json"),
  "--dataset",
  "synth",
  "--embedding",
  "joint",
];

describe("lever train sft", () => {
  it("trains, records the run, streams metrics to the workspace and writes per-epoch and best checkpoints", async () => {
    const out = JSON.parse(
      await run([
        ...base,
        "--epochs",
        "3",
        "--hidden",
        "8",
        "--lr",
        "1e-2",
        "--batch-queries",
        "8",
        "--val-fraction",
        "0.2",
        "--quiet",
        "--json",
        "--early-stopping-metric",
        "valTop1",
        "--early-stopping-mode",
        "max",
      ]),
    );
    expect(out).toMatchObject({ queries: { train: 48, val: 12 }, trajectories: 120, shots: 2, K: 8, epochsRun: 3 });
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const runRecord = ws.getRun(out.runId)!;
      expect(runRecord.status).toBe("done");
      expect(ws.getStage(out.runId, "sft")?.status).toBe("done");
      expect(ws.getStage(out.runId, "sft")?.artifacts).toHaveLength(5); // 3 epochs, best, health.json
      const epochRows = ws.getMetrics(out.runId, { name: "epoch.valTop1" });
      expect(epochRows.map((r) => r.epoch)).toEqual([0, 1, 2]);
      expect(ws.getMetrics(out.runId, { name: "loss" })).toHaveLength(3 * 6);
    } finally {
      ws.close();
    }
    expect(existsSync(out.bestCheckpoint)).toBe(true);
    const best = loadCheckpoint(out.bestCheckpoint);
    expect(best.provenance.runId).toBe(out.runId);
    // The answer features (a training default) read the index's annotations, hashed with the inputs.
    expect(Object.keys(best.provenance.dataHashes).sort()).toEqual([
      "beams",
      "indexAnswers",
      "indexEmbedding",
      "pools",
      "queryEmbedding",
      "voteScale",
    ]);
    expect(best.config).toMatchObject({ d: 8, hidden: 8, stateUpdate: "gate", features: ["vote", "agreement"] });
    // The vote feature's scale, calibrated on the index when training started, is recorded with the weights.
    expect(best.config.voteScale).toBeGreaterThan(0);
    expect(best.provenance.dataHashes.voteScale).toBe(String(best.config.voteScale));
  });

  it("takes a JSON config and lets flags override it; bad values name the field", async () => {
    writeFileSync(
      join(dir, "cfg.json"),
      JSON.stringify({ model: { hidden: 4, stateUpdate: "gru" }, optim: { epochs: 1 }, seed: 5 }),
    );
    const out = JSON.parse(
      await run([...base, "--config", join(dir, "cfg.json"), "--hidden", "6", "--quiet", "--json"]),
    );
    const best = loadCheckpoint(out.bestCheckpoint);
    expect(best.config).toMatchObject({ hidden: 6, stateUpdate: "gru" });
    expect(best.provenance.seed).toBe(5);
    expectUserError(await runTrainCli([...base, "--lr", "-1", "--quiet"]), /field "--lr": Too small/);
    expectUserError(await runTrainCli([...base, "--state-update", "lstm", "--quiet"]), /field "--state-update"/);
    // A bad value or an unknown key in the file names the file and the key (and the line, for YAML).
    writeFileSync(join(dir, "bad.yaml"), "model:\n  hidden: 4\noptim:\n  lr: -3\n");
    expectUserError(
      await runTrainCli([...base, "--config", join(dir, "bad.yaml"), "--quiet"]),
      /bad\.yaml, field "optim\.lr": Too small.*\(line 4\)/,
    );
    writeFileSync(join(dir, "typo.json"), JSON.stringify({ optim: { learningRate: 1 } }));
    expectUserError(
      await runTrainCli([...base, "--config", join(dir, "typo.json"), "--quiet"]),
      /typo\.json, field "optim\.learningRate": Unrecognized key/,
    );
  });

  it("refuses pools drawn from another dataset, naming the pool file", async () => {
    writeFileSync(join(dir, "pools-other.json"), JSON.stringify({ ...world.pools, indexDataset: "other" }));
    expectUserError(
      await runTrainCli([
        "sft",
        "--beams",
        join(dir, "beams.json"),
        "--pools",
        join(dir, "pools-other.json"),
        "--dataset",
        "synth",
        "--embedding",
        "joint",
        "--quiet",
      ]),
      /pools-other\.json, field "indexDataset"/,
    );
  });
});

describe("lever train grpo", () => {
  it("cross-field settings are refused before anything runs, naming the flag and the fix", async () => {
    const grpo = ["grpo", "--dataset", "d", "--pools", "p", "--online-credit", "prefix", "--quiet"];
    expectUserError(await runTrainCli(grpo), /field "--online-credit": prefix credit .* add --online/);
    expectUserError(
      await runTrainCli([...grpo, "--online", "--loss-ratio-level", "sequence"]),
      /field "--loss-ratio-level": .*set loss\.ratioLevel to step/,
    );
  });
});

describe("lever train resume", () => {
  it("continues a crashed run (named by its --name) from its last finished epoch to the same weights as an uninterrupted run", async () => {
    const flags = ["--epochs", "3", "--hidden", "8", "--lr", "1e-2", "--batch-queries", "16", "--quiet", "--json"];
    const straight = JSON.parse(await run([...base, ...flags]));
    // Crash after epoch 2's state is saved: the progress stream fails when it prints that epoch. (Named: the
    // same settings unnamed are the straight run, which is done.)
    const ws = Workspace.open(wsDir, { create: false });
    let crashedRun = "";
    try {
      const config = SftConfigSchema.parse({
        model: { hidden: 8 },
        optim: { epochs: 3, lr: 1e-2, batchQueries: 16 },
      });
      await expect(
        runSftStage(ws, {
          beams: join(dir, "beams.json"),
          pools: join(dir, "pools.json"),
          dataset: "synth",
          embedding: "joint",
          name: "crashed",
          config,
          progress: crashingProgress("epoch 2/3"),
        }),
      ).rejects.toThrow(/simulated crash/);
      crashedRun = ws.listRuns({ kind: "sft" }).at(-1)!.id;
      expect(ws.getRun(crashedRun)?.status).toBe("failed");
    } finally {
      ws.close();
    }
    // A run is named by its --name as well as by its id, as everywhere else.
    expectUserError(
      await runTrainCli(["resume", "crashd", "--quiet"]),
      'error: field "run": no training run "crashd" in this workspace (give a run id or --name)',
    );
    const resumed = JSON.parse(await run(["resume", "crashed", "--quiet", "--json"]));
    expect(resumed.runId).toBe(crashedRun);
    expect(resumed.epochsRun).toBe(3);
    const a = loadCheckpoint(straight.bestCheckpoint);
    const b = loadCheckpoint(resumed.bestCheckpoint);
    expect(b.provenance.epoch).toBe(a.provenance.epoch);
    for (const [name, v] of a.params) expect(b.params.get(name)).toEqual(v);
    expectUserError(await runTrainCli(["resume", crashedRun, "--quiet"]), /already done/);
  });
});

describe("running the same training command again", () => {
  const config = SftConfigSchema.parse({ model: { hidden: 8 }, optim: { epochs: 3, lr: 1e-2, batchQueries: 10 } });
  const sft = (ws: Workspace, progress: Parameters<typeof runSftStage>[1]["progress"], notes: string[] = []) =>
    runSftStage(ws, {
      beams: join(dir, "beams.json"),
      pools: join(dir, "pools.json"),
      dataset: "synth",
      embedding: "joint",
      config,
      progress,
      note: (text) => notes.push(text),
    });

  it("resumes a failed run from its last finished epoch instead of training a new one", async () => {
    const ws = Workspace.open(wsDir, { create: false });
    try {
      await expect(sft(ws, crashingProgress("epoch 2/3"))).rejects.toThrow(/simulated crash/);
      const failed = ws.listRuns({ kind: "sft" }).at(-1)!;
      expect(failed).toMatchObject({ status: "failed", error: "simulated crash" });
      const lines: string[] = [];
      const notes: string[] = [];
      const result = await sft(ws, { isTTY: false, write: (text) => lines.push(text) }, notes);
      expect(result.runId).toBe(failed.id);
      expect(notes).toEqual([
        `run ${failed.id} with these settings and inputs failed (simulated crash); resuming it (the same as: lever train resume ${failed.id})`,
        "sft validates on 6 of 60 queries (held out by image, seed 42)",
      ]);
      // Only the third epoch is trained again; the first two are kept.
      expect(lines.map((l) => l.split("  ")[0])).toEqual(["sft epoch 3/3"]);
      expect(ws.getMetrics(failed.id, { name: "epoch.trainLoss" }).map((r) => r.epoch)).toEqual([0, 1, 2]);
      expect(result).toMatchObject({
        epochsRun: 3,
        checkpoints: [1, 2, 3].map((e) => expect.stringContaining(`epoch-00${e}`)),
      });
      expect(ws.listRuns({ kind: "sft", configHash: failed.configHash })).toHaveLength(1);
      expect(ws.getRun(failed.id)).toMatchObject({ status: "done", error: null });
    } finally {
      ws.close();
    }
  });

  it("trains nothing for a run that is done: the same command hands back its result", async () => {
    // Stops early after epoch 2 of 5 (no later epoch improves by 100), so the result is not simply "every epoch".
    const flags = ["--epochs", "5", "--hidden", "8", "--seed", "3", "--early-stopping-patience", "1"];
    const command = [...base, ...flags, "--early-stopping-min-delta", "100", "--json"];
    const first = await runTrainCli(command);
    expect(first.code, first.stderr).toBe(0);
    const again = await runTrainCli(command);
    expect(again.code, again.stderr).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result).toMatchObject({ epochsRun: 2, stoppedEarly: true });
    expect(JSON.parse(again.stdout)).toEqual(result);
    expect(again.stderr).toMatch(
      new RegExp(
        `^note: run ${result.runId} with these settings and inputs is already done \\(finished [^)]+\\); nothing to train, its checkpoints are the result\n$`,
      ),
    );
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const run = ws.getRun(result.runId)!;
      expect(ws.listRuns({ kind: "sft", configHash: run.configHash })).toHaveLength(1);
      expect(ws.getMetrics(result.runId, { name: "epoch.trainLoss" })).toHaveLength(2);
    } finally {
      ws.close();
    }
  });
});

describe("resuming a run that started from a checkpoint", () => {
  it("keeps the checkpoint's architecture (not the config's model) and reaches the uninterrupted run's weights", async () => {
    // An architecture the config's model settings do not describe: without the checkpoint it cannot be rebuilt.
    const architecture = SelectorConfigSchema.parse({ d: 8, hidden: 6, stateUpdate: "gru", shots: 2 });
    const init = join(dir, "init-gru.safetensors");
    saveCheckpoint(init, {
      config: architecture,
      params: initParams(architecture, 4),
      trainedK: 8,
      shots: 2,
      provenance: { stage: "test", createdAt: "2026-01-01T00:00:00Z" },
    });
    const config = SftConfigSchema.parse({ optim: { epochs: 3, lr: 1e-2, batchQueries: 16 }, seed: 11 });
    const options = { beams: join(dir, "beams.json"), pools: join(dir, "pools.json"), dataset: "synth", init };
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const inputs = { ...options, embedding: "joint" as const, config };
      const straight = await runSftStage(ws, { ...inputs, name: "from-init", progress: null });
      await expect(
        runSftStage(ws, { ...inputs, name: "from-init-crash", progress: crashingProgress("epoch 2/3") }),
      ).rejects.toThrow(/simulated crash/);
      const crashed = ws.listRuns({ kind: "sft" }).at(-1)!.id;
      const resumed = await resumeSftStage(ws, crashed, { progress: null });
      expect(resumed.epochsRun).toBe(3);
      const a = loadCheckpoint(straight.checkpoints.at(-1)!);
      const b = loadCheckpoint(resumed.checkpoints.at(-1)!);
      expect(b.config).toEqual(architecture);
      for (const [name, v] of a.params) expect(b.params.get(name)).toEqual(v);
    } finally {
      ws.close();
    }
  });
});

describe("interrupted training", () => {
  const flags = ["--epochs", "3", "--hidden", "8", "--lr", "1e-2", "--batch-queries", "12", "--seed", "7"];

  it("re-running `lever train sft` after the process was killed resumes that run (same weights); a live holder is refused", async () => {
    const straight = JSON.parse(await run([...base, ...flags, "--quiet", "--json"]));
    // The same training in another process, killed (SIGKILL: no cleanup at all) while it prints epoch 2;
    // named, since the same settings unnamed are the straight run, which is done.
    const script = `
      import { Workspace } from ${JSON.stringify(resolve("dist/src/store/workspace.js"))};
      import { runSftStage } from ${JSON.stringify(resolve("dist/src/train/stage/sft-stage.js"))};
      import { SftConfigSchema } from ${JSON.stringify(resolve("dist/src/train/stage/sft-run.js"))};
      const ws = Workspace.open(${JSON.stringify(wsDir)});
      await runSftStage(ws, {
        beams: ${JSON.stringify(join(dir, "beams.json"))},
        pools: ${JSON.stringify(join(dir, "pools.json"))},
        dataset: "synth",
        embedding: "joint",
        name: "victim",
        config: SftConfigSchema.parse({ model: { hidden: 8 }, optim: { epochs: 3, lr: 1e-2, batchQueries: 12 }, seed: 7 }),
        progress: { isTTY: false, write: (text) => { if (text.includes("epoch 2/3")) process.kill(process.pid, "SIGKILL"); } },
      });`;
    const killed = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    const ws = Workspace.open(wsDir, { create: false });
    const victim = ws.listRuns({ kind: "sft" }).at(-1)!;
    expect(victim).toMatchObject({ status: "interrupted", holder: { pid: killed.pid } });
    expect(ws.getStage(victim.id, "sft")?.status).toBe("running");
    // While another live process holds it, the same command is refused, naming that process.
    const sleeper = spawn("sleep", ["30"]);
    ws.db
      .prepare("UPDATE leases SET pid = ?, started_at = '2026-02-02T00:00:00.000Z' WHERE run = ?")
      .run(sleeper.pid, victim.id);
    ws.close();
    try {
      expectUserError(
        await runTrainCli([...base, ...flags, "--name", "victim", "--quiet"]),
        new RegExp(
          `run ${victim.id} is in use by process ${sleeper.pid}@${hostname()} \\(since 2026-02-02T00:00:00\\.000Z`,
        ),
      );
    } finally {
      sleeper.kill();
    }
    await new Promise((done) => sleeper.once("exit", done));
    const resumed = await runTrainCli([...base, ...flags, "--name", "victim", "--quiet", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(
      `note: run ${victim.id} with these settings and inputs was interrupted (its process stopped); resuming it (the same as: lever train resume ${victim.id})`,
    );
    expect(resumed.stderr).toMatch(new RegExp(`note: took run ${victim.id} over from process ${sleeper.pid}@`));
    const result = JSON.parse(resumed.stdout);
    expect(result.runId).toBe(victim.id);
    const a = loadCheckpoint(straight.bestCheckpoint);
    const b = loadCheckpoint(result.bestCheckpoint);
    for (const [name, v] of a.params) expect(b.params.get(name)).toEqual(v);
    const after = Workspace.open(wsDir, { create: false });
    expect(after.getRun(victim.id)).toMatchObject({ status: "done", holder: null });
    after.close();
  });

  it("records what a run read, so `lever pools --out NAME --replace` cannot replace a pool set a run trained on", async () => {
    const ws = Workspace.open(wsDir, { create: false });
    writePoolSet(ws, "trained-on", world.pools);
    ws.close();
    const out = JSON.parse(
      await run([
        "sft",
        "--beams",
        join(dir, "beams.json"),
        "--pools",
        "trained-on",
        "--dataset",
        "synth",
        "--epochs",
        "1",
        "--quiet",
        "--json",
      ]),
    );
    const check = Workspace.open(wsDir, { create: false });
    expect(check.runsReading("pools/trained-on.json")).toEqual([out.runId]);
    expect(check.runsReading(join(dir, "beams.json"))).toContain(out.runId);
    check.close();
    const pools = [
      "--workspace",
      wsDir,
      "pools",
      "--queries",
      "synth",
      "--index",
      "synth",
      "--sampler",
      "random",
      "--k",
      "8",
    ];
    expectUserError(await runCli([...pools, "--out", "trained-on"]), /pass --replace/);
    expectUserError(
      await runCli([...pools, "--out", "trained-on", "--replace"]),
      new RegExp(`trained-on\\.json: artefact is an input of run ${out.runId}, so it is never replaced`),
    );
    await runCliOk([...pools, "--out", "fresh"]);
    await runCliOk([...pools, "--out", "fresh", "--seed", "1", "--replace"]); // no run read it: replaced
  });
});

describe("checkpoints named by run", () => {
  it("lever selector inspect RUN:epoch-N, lever train sft --init RUN; lever train rce without --init is refused", async () => {
    const first = JSON.parse(
      await run([...base, "--epochs", "2", "--hidden", "8", "--name", "named", "--quiet", "--json"]),
    );
    const inspect = (ref: string) =>
      runCliOk(["--workspace", wsDir, "selector", "inspect", ref, "--json"]).then((out) => JSON.parse(out));
    expect((await inspect(`${first.runId}:epoch-1`)).provenance).toMatchObject({ runId: first.runId, epoch: 0 });
    expect((await inspect("named:last")).provenance).toMatchObject({ runId: first.runId, epoch: 1 });
    expectUserError(
      await runCli(["--workspace", wsDir, "selector", "inspect", `${first.runId}:epoch-5`]),
      `run ${first.runId} has no epoch-5 checkpoint (finished epochs: 1, 2;`,
    );
    const next = JSON.parse(
      await run([...base, "--epochs", "1", "--hidden", "8", "--init", "named", "--quiet", "--json"]),
    );
    const ws = Workspace.open(wsDir, { create: false });
    expect(ws.getRun(next.runId)?.config).toMatchObject({ init: first.bestCheckpoint });
    ws.close();
    // The starting checkpoint read joint embeddings: a run reading another kind is one line, exit 2.
    expectUserError(
      await runTrainCli([...base.map((a) => (a === "joint" ? "text" : a)), "--init", "named", "--quiet"]),
      /^error: .*best\.safetensors, field "provenance\.notes\.embedding": the selector was trained on "joint" embeddings, not "text" \(--embedding\)/,
    );
    expectUserError(
      await runTrainCli(["rce", "--rollouts", join(dir, "beams.json"), "--dataset", "synth"]),
      'field "--init": RCE starts from a checkpoint: give --init RUN (e.g. the SFT run: --init sft-0001) or a file, or --init random',
    );
  });
});
