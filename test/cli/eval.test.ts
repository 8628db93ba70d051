import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";
import { expectUserError, runCli } from "../helpers/cli.js";
import { summaryCells } from "../helpers/summary.js";

let sim: SimWorkspace;
let wsDir: string;
beforeAll(() => {
  sim = simWorkspace({ trainItems: 200, valItems: 30, concepts: 6 });
  wsDir = sim.ws.dir;
  sim.ws.close(); // the CLI opens its own connection
});

const lever = (...args: string[]) => runCli(["--workspace", wsDir, ...args]);

const base = () => [
  "eval",
  "--dataset",
  "val",
  "--index",
  "train",
  "--queries",
  "first:20",
  "--shots",
  "1,2",
  "--world",
  sim.worldFile,
  "--resamples",
  "200",
];

describe("lever eval", () => {
  it("prints the accuracy table and the paired comparisons (lever compare's), and a run line on stderr", async () => {
    const { code, stdout, stderr } = await lever(...base(), "--retriever", "zero,random,topk-image");
    expect(code).toBe(0);
    // The settings first: level, resamples, seed, baseline, test, α.
    expect(stdout).toMatch(
      /^Accuracy: official VQA accuracy \(%\), 95% bootstrap CI over questions \(200 resamples, seed 0\)/,
    );
    expect(stdout).toMatch(/\nΔ: method − baseline \(eval-\d+\/random\) in points/);
    expect(stdout).toMatch(/\np: exact McNemar .* \(p_Holm ≤ 0\.05\)/);
    expect(stdout).toContain("== all questions (20, question-id order) ==");
    expect(stdout).toMatch(/\nzero\s+\d+\.\d\d \[/);
    expect(stdout).toMatch(/\nrandom \(baseline\)\s+\d+\.\d\d \[/);
    // The paired comparisons: method, shot, pairs, excluded, Δ.
    expect(stdout).toMatch(/\ntopk-image\s+1\s+20\s+0\s+[+-]?\d/);
    expect(stdout).toMatch(/\ntopk-image\s+2\s+20\s+0\s+[+-]?\d/);
    expect(stdout).toMatch(
      /\nnote: baseline: (eval-\d+)\/random, the random retriever; `lever compare \1 --baseline \1\/random --subsets all --seed 0 --resamples 200` shows these numbers/,
    );
    expect(stderr).toMatch(/run eval-\d+: 100 predictions planned, 0 already stored, 100 evaluated, 0 failed/);
  });

  it("re-running is a resume: nothing evaluated, same table; --json gives the same numbers as one object", async () => {
    const text = await lever(...base(), "--retriever", "zero,random,topk-image");
    expect(text.stderr).toMatch(/\(resumed\): 100 predictions planned, 100 already stored, 0 evaluated/);
    const json = await lever(...base(), "--retriever", "zero,random,topk-image", "--json");
    expect(json.code).toBe(0);
    const result = JSON.parse(json.stdout);
    expect(result.stats).toMatchObject({ planned: 100, skipped: 100, evaluated: 0 });
    expect(summaryCells(result.summary).map((c) => `${c.retriever}@${c.shot}`)).toEqual([
      "zero@0",
      "random@1",
      "random@2",
      "topk-image@1",
      "topk-image@2",
    ]);
    expect(result.config.format).toBe("lever.eval/1");
  });

  it("without --queries every query of the dataset is evaluated (the default is all, not a first:N sample)", async () => {
    const args = base();
    args.splice(args.indexOf("--queries"), 2);
    const { code, stdout, stderr } = await lever(...args, "--retriever", "zero", "--run", "every-query", "--json");
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout).config.queries).toBe("all");
    expect(stderr).toMatch(/: 30 predictions planned/); // 30 validation questions × zero-shot
  });

  it("reports bad input as one line naming the flag, with exit code 2", async () => {
    expectUserError(
      await lever(...base(), "--retriever", "zero,nearest"),
      /^error: field "--retriever": unknown retriever "nearest"/,
    );
    expectUserError(await lever(...base(), "--shots", "1,x"), 'field "--shots"');
    expectUserError(await lever(...base(), "--order", "middle"), 'field "--order"');
    expectUserError(await lever(...base(), "--queries", "some"), 'field "--queries"');
    expectUserError(await lever(...base(), "--vlm", "openai"), 'field "--base-url": the openai backend needs');
    expectUserError(await lever("eval", "--dataset", "nope", "--index", "train", "--world", sim.worldFile), "nope");
    const oracleOpenai = await lever(
      ...base(),
      "--vlm",
      "openai",
      "--base-url",
      "http://127.0.0.1:9",
      "--model",
      "m",
      "--retriever",
      "oracle",
    );
    expectUserError(oracleOpenai, "oracle retriever needs the simulated VLM");
    expectUserError(await lever(...base(), "--resamples", "1e8"), 'error: field "--resamples": at most 1000000 (1e6)');
    // Only 0 shots without the zero retriever would predict nothing: an error, not an empty success.
    expectUserError(
      await lever(...base().map((a) => (a === "1,2" ? "0" : a)), "--retriever", "random"),
      'error: field "--shots": only 0 shots, where only the zero retriever runs: --retriever random would make no prediction; add a positive shot count or the zero retriever',
    );
  });
});

describe("lever eval selector:CKPT", () => {
  it("uses the checkpoint's pool sampler, K and embedding when no flag is given, and flags when they agree with it", async () => {
    const config = SelectorConfigSchema.parse({ d: 64, hidden: 16, shots: 2, dropout: 0, attnDropout: 0 });
    const ckpt = join(sim.dir, "cli-sel.safetensors");
    saveCheckpoint(ckpt, {
      config,
      params: initParams(config, 3),
      trainedK: 10,
      shots: 2,
      provenance: { stage: "init", createdAt: "2026-01-01T00:00:00Z", notes: { poolSampler: "text-sim" } },
    });
    const own = await lever(...base(), "--retriever", `random,selector:${ckpt}`);
    expect(own.code).toBe(0);
    expect(own.stderr).toMatch(
      /note: selector:.*cli-sel\.safetensors@[0-9a-f]{12}: pool text-sim \(checkpoint\), K=10 \(checkpoint\), embedding joint \(default\)/,
    );
    expect(own.stdout).toMatch(/\nselector:cli-sel\s+1\s+20\s+0\s+[+-]?\d/);
    const flagged = await lever(
      ...base(),
      "--retriever",
      `selector:${ckpt}`,
      "--k",
      "16",
      "--pool-sampler",
      "text-sim",
    );
    expect(flagged.stderr).toMatch(/pool text-sim \(flag\), K=16 \(flag\), embedding joint \(default\)/);
    // Pools of another sampler than the selector was trained on: refused in one line, before any prediction.
    expectUserError(
      await lever(...base(), "--retriever", `selector:${ckpt}`, "--pool-sampler", "random"),
      'cli-sel.safetensors, field "provenance.notes.poolSampler": the selector was trained on "text-sim" pools, not "random" (--pool-sampler)',
    );
  });
});
