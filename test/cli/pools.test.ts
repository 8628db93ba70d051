import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { writeNpy } from "../../src/data/npy.js";
import { importEmbedding } from "../../src/store/ingest/embeddings.js";
import { readPoolSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { expectUserError, runCli, runCliOk } from "../helpers/cli.js";
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

const runPoolsCli = (args: string[]) => runCli(["--workspace", wsDir, "pools", ...args]);
/** `lever --workspace WS pools …`, which must succeed; returns what it printed. */
const runPools = (args: string[]) => runCliOk(["--workspace", wsDir, "pools", ...args]);

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
    expectUserError(
      await runPoolsCli(["--queries", "val", "--index", "train", "--sampler", "random", "--k", "61"]),
      /field "k": K=61 is larger than the 60 eligible candidates/,
    );
    expectUserError(
      await runPoolsCli(["--queries", "val", "--index", "train", "--sampler", "mix", "--ratios", "0.5,0.5,0.5"]),
      /field "--ratios": the three shares must sum to 1/,
    );
    expectUserError(
      await runPoolsCli(["--queries", "val", "--index", "train", "--sampler", "random", "--ratios", "1,0,0"]),
      /field "--ratios": ratios only apply to the mix sampler/,
    );
    expectUserError(await runPoolsCli(["--queries", "nope", "--index", "train", "--sampler", "random"]), /nope/);
    expectUserError(
      await runPoolsCli(["--queries", "val", "--index", "train", "--sampler", "joint-sim"]),
      /has no "joint" embedding/,
    );
  });
});
