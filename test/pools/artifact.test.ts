import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { checkPoolSet } from "../../src/data/pool-set.js";
import { buildPoolSet, embeddingKindsFor } from "../../src/pools/artifact.js";
import { poolSampler } from "../../src/pools/samplers.js";
import { readPoolSet, writePoolSet } from "../../src/store/sets.js";
import { Workspace } from "../../src/store/workspace.js";
import { makeEmbedding, makeItems } from "./helpers.js";

const index = makeItems("t", 20, 2);
const queries = makeItems("v", 5, 1);

let dir: string;
let ws: Workspace;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-pools-"));
  ws = Workspace.open(join(dir, "ws"));
});
afterEach(() => {
  ws.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("pool set artefacts", () => {
  test("build → write → read round-trips and records sampler settings", () => {
    const set = buildPoolSet({
      queryDataset: "val",
      queries,
      indexDataset: "train",
      index,
      pool: poolSampler("mix"),
      k: 8,
      seed: 3,
      queryEmbeddings: { text: makeEmbedding(queries, 4, 1), image: makeEmbedding(queries, 4, 2) },
      indexEmbeddings: { text: makeEmbedding(index, 4, 3), image: makeEmbedding(index, 4, 4) },
      provenance: { note: "test" },
    });
    expect(set.settings).toMatchObject({ ratios: { random: 0.5, text: 0.25, image: 0.25 }, quotas: [4, 2, 2] });
    expect(Object.keys(set.pools)).toEqual(queries.map((q) => q.questionId));
    const ref = writePoolSet(ws, "val.mix", set);
    expect(ref.path).toBe("pools/val.mix.json");
    expect(readPoolSet(ws, "val.mix")).toEqual(set);
  });

  test("reading rejects a pool set that breaks the contract, naming file, query and field", () => {
    const set = buildPoolSet({
      queryDataset: "val",
      queries,
      indexDataset: "train",
      index,
      pool: { sampler: "random" },
      k: 4,
      seed: 1,
    });
    const bad = structuredClone(set);
    bad.pools.v0 = ["t1", "t1", "t2", "t3"];
    expect(() => checkPoolSet(bad, "P.json")).toThrow('P.json, record "v0", field "pools": pool contains a duplicate');
    bad.pools.v0 = ["t1"];
    expect(() => checkPoolSet(bad, "P.json")).toThrow(/pool has 1 candidates, expected k=4/);
    ws.writeArtifact("pools/broken.json", JSON.stringify({ ...set, format: "other" }));
    expect(() => readPoolSet(ws, "broken")).toThrow(/broken\.json, field "format"/);
    expect(() => readPoolSet(ws, "absent")).toThrow(/no such artefact/);
    expect(() => writePoolSet(ws, "../escape", set)).toThrow(/artefact name/);
  });

  test("knows which embeddings each sampler reads", () => {
    expect(embeddingKindsFor({ sampler: "random" }, 64)).toEqual([]);
    expect(embeddingKindsFor({ sampler: "joint-sim" }, 64)).toEqual(["joint"]);
    expect(embeddingKindsFor(poolSampler("mix"), 64)).toEqual(["text", "image"]);
    expect(embeddingKindsFor(poolSampler("mix", [0.5, 0.5, 0]), 64)).toEqual(["text"]);
  });
});
