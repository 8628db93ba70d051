/**
 * `lever beams` and `lever rollouts` against the OpenAI-compatible backend (the mock vLLM server),
 * including a server that fails some requests: failures are recorded, never scored, and the next
 * run retries them and ends with the artefact a clean run writes.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRolloutSet } from "../../src/store/sets.js";
import { type CliResult, runCli, runCliOk } from "../helpers/cli.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { type DatagenWorkspace, datagenWorkspace } from "./helpers.js";

let mock: MockVllm;
let clean: DatagenWorkspace;
let faulty: DatagenWorkspace;

const openai = () => ["--vlm", "openai", "--base-url", mock.url, "--model", "mock-vl", "--max-retries", "0"];
const beams = (w: DatagenWorkspace) =>
  w.args(
    "beams",
    "--dataset",
    "train",
    "--pools",
    "p",
    "--anchors",
    "first:3",
    "--shots",
    "2",
    "--beam-size",
    "2",
    "--budget",
    "5",
    "--out",
    "b",
    ...openai(),
  );
const rollouts = (w: DatagenWorkspace) =>
  w.args(
    "rollouts",
    "--dataset",
    "train",
    "--pools",
    "p",
    "--queries",
    "first:3",
    "--retrieval",
    "2",
    "--random",
    "2",
    "--out",
    "r",
    ...openai(),
  );

/** Exit code 2, the run line, then one error line matching `message`. */
function expectFailedRun(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines[lines.length - 2]).toMatch(/^run (beams|rollouts)-\d+: /);
  expect(lines[lines.length - 1]).toMatch(/^error: /);
  expect(lines[lines.length - 1]).toMatch(message);
}

beforeAll(async () => {
  mock = await MockVllm.start();
  clean = await datagenWorkspace({ trainItems: 120 });
  faulty = await datagenWorkspace({ trainItems: 120 });
});

afterAll(async () => {
  await mock.close();
});

describe("data generation against an OpenAI-compatible server", () => {
  it("beams: failed requests fail their anchors visibly; the rerun retries them and matches a clean run", async () => {
    await runCliOk([...beams(clean), "--quiet"]);
    expect(mock.count("/v1/chat/completions")).toBeGreaterThan(0);

    mock.inject("chat", ...Array.from({ length: 3 }, () => ({ kind: "status" as const, status: 500 })));
    // Without the preflight check, so the injected failures hit the anchors' own requests.
    const failed = await runCli([...beams(faulty), "--quiet", "--no-preflight"]);
    expectFailedRun(
      failed,
      /of 3 anchors failed \(first: \d+: http-5xx.*no artefact written; rerun the same command to retry them/,
    );
    expect(failed.stderr).not.toContain("0 failures");
    const retried = await runCli([...beams(faulty), "--quiet", "--json"]);
    expect(retried.code, retried.stderr).toBe(0);
    const summary = JSON.parse(retried.stdout);
    expect(summary.anchors.failed).toBe(0);
    expect(summary.anchors.searched).toBeGreaterThan(0);
    expect(summary.anchors.skipped + summary.anchors.searched).toBe(3);
    const read = (w: DatagenWorkspace) => readFileSync(w.ws.artifactPath("beams/b.json"));
    expect(read(faulty).equals(read(clean))).toBe(true);
  });

  it("beams and rollouts check the server before any item: a server failing chat requests stops them with one line", async () => {
    const fresh = await datagenWorkspace({ trainItems: 120 });
    for (const command of [beams, rollouts]) {
      mock.inject("chat", ...Array.from({ length: 2 }, () => ({ kind: "status" as const, status: 500 })));
      const stopped = await runCli([...command(fresh), "--quiet"]);
      expect(stopped.code, stopped.stderr).toBe(2);
      expect(stopped.stderr.trim()).toMatch(
        /^error: the VLM server at \S+ failed a chat request with an image: http-5xx/,
      );
      expect(stopped.stderr).not.toMatch(/anchors failed|quer(y|ies) failed/);
    }
  });

  it("rollouts: failed requests stay in the artefact marked evalFailed, and the rerun replaces them", async () => {
    await runCliOk([...rollouts(clean), "--quiet"]);
    mock.inject("chat", ...Array.from({ length: 2 }, () => ({ kind: "status" as const, status: 503 })));
    const failed = await runCli([...rollouts(faulty), "--quiet", "--no-preflight"]);
    expectFailedRun(
      failed,
      /trajectories of \d+ quer(y|ies) failed \(marked evalFailed in artifacts\/rollouts\/r.json, excluded from rewards\)/,
    );
    const marked = readRolloutSet(faulty.ws, "r");
    const bad = Object.values(marked.queries).flatMap((q) => q.trajectories.filter((t) => t.evalFailed));
    expect(bad.length).toBeGreaterThan(0);
    expect(bad.every((t) => t.vqaAccScore === null && String(t.extra?.failure).startsWith("http-5xx"))).toBe(true);

    const retried = await runCli([...rollouts(faulty), "--quiet", "--json"]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout).stats.failed).toEqual({ trajectories: 0, queries: 0 });
    const read = (w: DatagenWorkspace) => readFileSync(w.ws.artifactPath("rollouts/r.json"));
    expect(read(faulty).equals(read(clean))).toBe(true);
  });
});
