import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { register } from "../../src/cli/pools.js";
import { importEmbedding } from "../../src/data/embeddings.js";
import { writeNpy } from "../../src/data/npy.js";
import { readPoolSet } from "../../src/pools/artifact.js";
import { Workspace } from "../../src/store/workspace.js";
import { makeEmbedding, makeItems } from "../pools/helpers.js";

let dir: string;
let wsDir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-pools-cli-"));
  wsDir = join(dir, "ws");
  const ws = Workspace.open(wsDir);
  const train = makeItems("t", 30, 2);
  const val = makeItems("v", 6, 1);
  ws.putDataset({ name: "train", split: "train", source: "synth", files: [] }, train);
  ws.putDataset({ name: "val", split: "val", source: "synth", files: [] }, val);
  for (const [name, items] of [
    ["train", train],
    ["val", val],
  ] as const) {
    for (const kind of ["text", "image"] as const) {
      const emb = makeEmbedding(items, 6, name.length * 10 + kind.length);
      const file = join(dir, `${name}-${kind}.npy`);
      writeNpy(file, emb.data, [items.length, 6]);
      writeFileSync(join(dir, `${name}-${kind}.ids.json`), JSON.stringify(emb.ids));
      importEmbedding(ws, { file, dataset: name, kind });
    }
  }
  ws.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function runPools(args: string[]): Promise<string> {
  const program = new Command().exitOverride().option("-w, --workspace <dir>");
  register(program);
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(["node", "lever", "--workspace", wsDir, "pools", ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

describe("lever pools", () => {
  test("stores a mix pool set as an artefact with the default name and prints a summary", async () => {
    const out = await runPools([
      "--queries",
      "val",
      "--index",
      "train",
      "--sampler",
      "mix",
      "--k",
      "8",
      "--seed",
      "4",
      "--json",
    ]);
    const summary = JSON.parse(out);
    expect(summary).toMatchObject({ name: "val.mix.k8.s4", path: "pools/val.mix.k8.s4.json", queries: 6, index: 60 });
    const ws = Workspace.open(wsDir, { create: false });
    try {
      const set = readPoolSet(ws, "val.mix.k8.s4");
      expect(set).toMatchObject({ sampler: "mix", k: 8, seed: 4, indexDataset: "train", queryDataset: "val" });
      expect(Object.keys(set.pools)).toHaveLength(6);
      expect(Object.keys(set.settings.embeddings as object).sort()).toEqual([
        "train/image",
        "train/text",
        "val/image",
        "val/text",
      ]);
    } finally {
      ws.close();
    }
  });

  test("--ratios and --out are honoured; re-running with the same seed gives the same artefact hash", async () => {
    const args = ["--queries", "val", "--index", "train", "--sampler", "mix", "--k", "10", "--ratios", "0.2,0.4,0.4"];
    const first = JSON.parse(await runPools([...args, "--out", "mine", "--json"]));
    const second = JSON.parse(await runPools([...args, "--out", "mine", "--json"]));
    expect(first.sha256).toBe(second.sha256);
    expect(first.ratios).toEqual({ random: 0.2, text: 0.4, image: 0.4 });
    const text = await runPools(["--queries", "val", "--index", "train", "--sampler", "random", "--k", "5"]);
    expect(text).toMatch(/^pools val\.random\.k5\.s0: 6 queries × K=5 from 60 train items/);
  });

  test("rejects K larger than the index, bad ratios and unknown datasets with one-line errors", async () => {
    await expect(
      runPools(["--queries", "val", "--index", "train", "--sampler", "random", "--k", "61"]),
    ).rejects.toThrow(/field "k": K=61 is larger than the 60 eligible candidates/);
    await expect(
      runPools(["--queries", "val", "--index", "train", "--sampler", "mix", "--ratios", "0.5,0.5,0.5"]),
    ).rejects.toThrow(/shares must sum to 1/);
    await expect(
      runPools(["--queries", "val", "--index", "train", "--sampler", "random", "--ratios", "1,0,0"]),
    ).rejects.toThrow(/--ratios only applies to --sampler mix/);
    await expect(runPools(["--queries", "nope", "--index", "train", "--sampler", "random"])).rejects.toThrow(/nope/);
    await expect(runPools(["--queries", "val", "--index", "train", "--sampler", "joint-sim"])).rejects.toThrow(
      /has no "joint" embedding/,
    );
  });
});
