import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeNpy } from "../../src/data/npy.js";
import { writeSafetensors } from "../../src/data/safetensors.js";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams, paramSpecs } from "../../src/selector/params.js";
import { Rng } from "../../src/util/rng.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "lever-selector-cli-"));

const runSelectorCli = (args: string[]) => runCli(["selector", ...args]);
/** `lever selector …`, which must succeed; returns what it printed. */
const run = (args: string[]) => runCliOk(["selector", ...args]);

const config = SelectorConfigSchema.parse({
  d: 8,
  hidden: 6,
  layers: 1,
  shots: 3,
  stateUpdate: "gru",
  stepEmbedding: true,
  redundancy: "max",
});
const ckpt = join(dir, "model.safetensors");
saveCheckpoint(ckpt, {
  config,
  params: initParams(config, 1),
  trainedK: 5,
  shots: 3,
  provenance: { stage: "sft", runId: "r1", epoch: 2, metrics: { valTop1: 0.75 }, createdAt: "2026-01-01T00:00:00Z" },
});
const rng = new Rng(4);
const Q = 4;
const K = 5;
const N = 9;
const queries = Float32Array.from({ length: Q * 8 }, () => rng.normal());
const cands = Float32Array.from({ length: Q * K * 8 }, () => rng.normal());
const index = Float32Array.from({ length: N * 8 }, () => rng.normal());
writeNpy(join(dir, "q.npy"), queries, [Q, 8]);
writeNpy(join(dir, "c.npy"), cands, [Q, K, 8]);
writeNpy(join(dir, "index.npy"), index, [N, 8]);
const pools = [
  [0, 1, 2, 3, 4],
  [8, 7, 6],
  [2, 4, 6, 8, 1],
  [5, 3, 1, 0],
];
writeFileSync(join(dir, "pools.json"), JSON.stringify(pools));

/** The checkpoint and embedding files every predict/logprob call starts with. */
const embArgs = (cand = "c.npy", query = "q.npy") => [
  ckpt,
  "--query-emb",
  join(dir, query),
  "--cand-emb",
  join(dir, cand),
];

describe("lever selector", () => {
  it("inspect of a missing file outside a workspace names the file, not the missing workspace", async () => {
    const missing = join(dir, "typo.safetensors");
    const result = await runCli(["--workspace", join(dir, "no-workspace"), "selector", "inspect", missing]);
    expectUserError(result, `error: ${missing}, field "<ckpt>": no such file`);
    expect(result.stderr).not.toContain("no lever workspace here");
  });

  it("inspect prints the architecture, per-group parameter counts and provenance", async () => {
    const info = JSON.parse(await run(["inspect", ckpt, "--json"]));
    expect(info.variant).toBe("v4-3");
    expect(info.trainedK).toBe(5);
    expect(info.parameters).toBe(info.groups.reduce((s: number, g: { count: number }) => s + g.count, 0));
    expect(info.provenance).toMatchObject({ stage: "sft", runId: "r1", epoch: 2 });
    const text = await run(["inspect", ckpt]);
    expect(text).toMatch(/lever-plus\.pointer-selector \(v4-3\)/);
    expect(text).toMatch(/gru\s+252\n/);
  });

  it("predict returns one trajectory per query in query order; logprob re-scores them identically", async () => {
    const out = JSON.parse(await run(["predict", ...embArgs(), "--json"]));
    expect(out.map((r: { query: number }) => r.query)).toEqual([0, 1, 2, 3]);
    for (const r of out) {
      expect(r.positions).toHaveLength(3);
      expect(new Set(r.positions).size).toBe(3);
    }
    writeFileSync(
      join(dir, "t.json"),
      JSON.stringify(
        out.map((r: { query: number; positions: number[] }) => ({ query: r.query, positions: r.positions })),
      ),
    );
    const lps = JSON.parse(await run(["logprob", ...embArgs(), "--trajectories", join(dir, "t.json"), "--json"]));
    lps.forEach((v: number, i: number) => {
      expect(v).toBeCloseTo(out[i].logprob, 5);
    });
    const beam = JSON.parse(await run(["predict", ...embArgs(), "--beam", "4", "--shots", "2", "--json"]));
    beam.forEach((r: { logprob: number; positions: number[] }) => {
      expect(r.positions).toHaveLength(2);
    });
  });

  it("predict and logprob from embedding files refuse a selector that reads its candidates' answers, saying where it runs", async () => {
    const withFeatures = SelectorConfigSchema.parse({ d: 8, hidden: 6, shots: 3, features: ["vote", "agreement"] });
    const file = join(dir, "features.safetensors");
    saveCheckpoint(file, {
      config: withFeatures,
      params: initParams(withFeatures, 1),
      trainedK: 5,
      shots: 3,
      provenance: { stage: "sft", runId: "r2", epoch: 0, metrics: {}, createdAt: "2026-01-01T00:00:00Z" },
    });
    const [, ...files] = embArgs();
    for (const command of ["predict", "logprob"]) {
      const extra = command === "logprob" ? ["--trajectories", join(dir, "t.json")] : [];
      expectUserError(
        await runSelectorCli([command, file, ...files, ...extra]),
        /features\.safetensors.*field "config".*reads its candidates' answers.*lever eval --retriever selector:CKPT/,
      );
    }
  });

  it("predict over an index with per-query pools of different sizes", async () => {
    const out = JSON.parse(
      await run(["predict", ...embArgs("index.npy"), "--pools", join(dir, "pools.json"), "--json"]),
    );
    out.forEach((r: { positions: number[] }, q: number) => {
      for (const p of r.positions) expect(p).toBeLessThan(pools[q].length);
    });
    const text = await run(["predict", ...embArgs("index.npy"), "--pools", join(dir, "pools.json")]);
    expect(text.trim().split("\n")).toHaveLength(4);
  });

  it("names the file and record of bad inputs", async () => {
    writeNpy(join(dir, "q7.npy"), new Float32Array(Q * 7), [Q, 7]);
    expectUserError(
      await runSelectorCli(["predict", ...embArgs("c.npy", "q7.npy")]),
      /q7\.npy: query embeddings must be \[queries, 8\], got \[4, 7\]/,
    );
    writeFileSync(
      join(dir, "badpools.json"),
      JSON.stringify([
        [0, 1, 2],
        [1, 1, 2],
        [0, 1, 2],
        [0, 1, 2],
      ]),
    );
    expectUserError(
      await runSelectorCli(["predict", ...embArgs("index.npy"), "--pools", join(dir, "badpools.json")]),
      /badpools\.json, record "1": pool lists a row twice/,
    );
    writeFileSync(join(dir, "badt.json"), JSON.stringify([{ query: 0, positions: [0, 0, 1] }]));
    expectUserError(
      await runSelectorCli(["logprob", ...embArgs(), "--trajectories", join(dir, "badt.json")]),
      /badt\.json, record "0", field "positions": repeats a position/,
    );
    expectUserError(
      await runSelectorCli(["predict", ...embArgs(), "--shots", "6"]),
      /query 0 has 5 candidates; cannot choose 6/,
    );
  });

  it("import-torch infers the architecture from a prefixed Lightning state dict and refuses converter renames", async () => {
    const gate = SelectorConfigSchema.parse({ d: 8, hidden: 6, layers: 2, stateUpdate: "gate" });
    const shapes = new Map(paramSpecs(gate).map((s) => [s.name, s.shape]));
    const values = initParams(gate, 9);
    const tensors = (rename: (n: string) => string) =>
      Object.fromEntries(
        [...values].map(([n, v]) => [
          rename(n),
          { dtype: "F32" as const, shape: shapes.get(n)!, data: Float32Array.from(v) },
        ]),
      );
    writeSafetensors(
      join(dir, "sd.safetensors"),
      tensors((n) => `lever_lm.pointer_selector.${n}`),
    );
    const summary = JSON.parse(
      await run([
        "import-torch",
        join(dir, "sd.safetensors"),
        "--out",
        join(dir, "imported.safetensors"),
        "--shots",
        "4",
        "--json",
      ]),
    );
    expect(summary).toMatchObject({
      variant: "v4-1",
      config: { d: 8, hidden: 6, layers: 2, stateUpdate: "gate", heads: 1 },
    });
    const info = JSON.parse(await run(["inspect", join(dir, "imported.safetensors"), "--json"]));
    expect(info.shots).toBe(4);
    expect(info.trainedK).toBeNull();
    expect(info.provenance.stage).toBe("import-torch");
    expect(info.provenance.dataHashes.source).toMatch(/^[0-9a-f]{64}$/);
    writeSafetensors(
      join(dir, "renamed.safetensors"),
      tensors((n) => n.replace("cross_attn_layers.0.", "cross_attn.").replace("attn_norms.0.", "attn_norm.")),
    );
    expectUserError(
      await runSelectorCli(["import-torch", join(dir, "renamed.safetensors"), "--out", join(dir, "x.safetensors")]),
      /refusing renamed keys/,
    );
    expect(() => readFileSync(join(dir, "x.safetensors"))).toThrow();
  });

  it("import-torch refuses --out equal to its input, and a directory as --out fails in one line leaving no temp file", async () => {
    const input = join(dir, "sd.safetensors");
    const before = readFileSync(input);
    expectUserError(
      await runSelectorCli(["import-torch", input, "--out", join(dir, ".", "sd.safetensors")]),
      /field "--out": is the input file/,
    );
    symlinkSync(input, join(dir, "sd-link.safetensors"));
    expectUserError(
      await runSelectorCli(["import-torch", join(dir, "sd-link.safetensors"), "--out", input]),
      /field "--out": is the input file/,
    );
    expect(readFileSync(input).equals(before)).toBe(true);
    const outDir = join(dir, "ckpt-dir");
    mkdirSync(outDir);
    expectUserError(
      await runSelectorCli(["import-torch", input, "--out", outDir, "--shots", "4"]),
      `error: ${outDir}: is a directory, not a file (EISDIR)`,
    );
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });
});
