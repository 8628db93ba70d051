import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEvalOptions } from "../../src/eval/config.js";
import { evaluate } from "../../src/eval/evaluate.js";
import { indexIdentity } from "../../src/icl/candidate-data.js";
import { loadSelector } from "../../src/icl/selector.js";
import { PoolBuilder } from "../../src/pools/samplers.js";
import { loadCheckpoint, saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { predict } from "../../src/selector/decode.js";
import { PointerSelector } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";
import { loadDatasetEmbedding } from "../../src/store/ingest/embeddings.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";
import { leverErrorOf } from "../helpers/errors.js";
import { summaryCells } from "../helpers/summary.js";

let sim: SimWorkspace;
let ckpt: string;
beforeAll(() => {
  sim = simWorkspace({ trainItems: 200, valItems: 30, concepts: 6 });
  const config = SelectorConfigSchema.parse({ d: 64, hidden: 32, shots: 4, dropout: 0, attnDropout: 0 });
  ckpt = join(sim.dir, "sel.safetensors");
  saveCheckpoint(ckpt, {
    config,
    params: initParams(config, 11),
    trainedK: 12,
    shots: 4,
    provenance: {
      stage: "init",
      createdAt: "2026-01-01T00:00:00Z",
      notes: { poolSampler: "random", embedding: "text" },
    },
  });
});
afterAll(() => sim.ws.close());

const embeddings = () => ({
  query: (kind: string) => loadDatasetEmbedding(sim.ws, "val", kind),
  index: (kind: string) => loadDatasetEmbedding(sim.ws, "train", kind),
});

describe("selector retriever", () => {
  it("takes pool sampler, K and embedding from the checkpoint unless flags give them; K may differ, the others not", () => {
    const fromCkpt = loadSelector(ckpt, {}, embeddings());
    expect(fromCkpt).toMatchObject({ sampler: "random", k: 12, embedding: "text" });
    expect(fromCkpt.sources).toEqual({ poolSampler: "checkpoint", k: "checkpoint", embedding: "checkpoint" });
    expect(fromCkpt.label).toMatch(/^selector:.*sel\.safetensors@[0-9a-f]{12}$/);
    const flagged = loadSelector(ckpt, { poolSampler: "random", k: 20, embedding: "text" }, embeddings());
    expect(flagged).toMatchObject({ sampler: "random", k: 20, embedding: "text" });
    expect(flagged.sources).toEqual({ poolSampler: "flag", k: "flag", embedding: "flag" });
    // A flag naming another embedding kind or pool sampler than the checkpoint was trained with: one line.
    expect(leverErrorOf(() => loadSelector(ckpt, { embedding: "joint" }, embeddings())).message).toMatch(
      /^.*sel\.safetensors, field "provenance\.notes\.embedding": the selector was trained on "text" embeddings, not "joint" \(--selector-embedding\)[^\n]*$/,
    );
    expect(leverErrorOf(() => loadSelector(ckpt, { poolSampler: "image-sim" }, embeddings())).message).toMatch(
      /^.*sel\.safetensors, field "provenance\.notes\.poolSampler": the selector was trained on "random" pools, not "image-sim" \(--pool-sampler\)[^\n]*$/,
    );
  });

  it("decodes each query from its OWN pool: the stored demonstrations are the greedy picks in that pool", async () => {
    const opts = parseEvalOptions({
      dataset: "val",
      index: "train",
      queries: "all",
      shots: [1, 3],
      retrievers: [`selector:${ckpt}`, "random"],
      vlm: "sim",
      world: sim.worldFile,
      seed: 9,
      resamples: 200,
      order: "farthest", // prompt order = selection order, so rows read directly as trajectories
    });
    const result = await evaluate(sim.ws, opts, { progress: null });
    const label = summaryCells(result.summary).find((c) => c.retriever.startsWith("selector:"))!.retriever;
    const rows = sim.ws.getPredictions(result.runId).filter((r) => r.retriever === label);
    expect(rows.length).toBe(30 * 2);

    // Independent recomputation: pools through the pool contract, greedy decode over the full pool.
    const queries = sim.ws.loadItems("val");
    const index = sim.ws.loadItems("train");
    const pools = new PoolBuilder({ index }).build(queries, { sampler: "random", k: 12, seed: 9 });
    const checkpoint = loadCheckpoint(ckpt);
    const model = new PointerSelector(checkpoint.config, checkpoint.params, "float32");
    const qEmb = loadDatasetEmbedding(sim.ws, "val", "text");
    const iEmb = loadDatasetEmbedding(sim.ws, "train", "text");
    const iRow = new Map(iEmb.ids.map((id, r) => [id, r]));
    const qRow = new Map(qEmb.ids.map((id, r) => [id, r]));
    const queryData = new Float32Array(queries.length * 64);
    queries.forEach((q, i) => {
      queryData.set(qEmb.data.subarray(qRow.get(q.questionId)! * 64, (qRow.get(q.questionId)! + 1) * 64), i * 64);
    });
    const slots = Int32Array.from(pools.flat().map((id) => iRow.get(id)!));
    for (const shots of [1, 3]) {
      const expected = predict(model, { queries: queryData, table: iEmb.data, slots, K: 12 }, { shots });
      queries.forEach((q, i) => {
        const row = rows.find((r) => r.questionId === q.questionId && r.shot === shots)!;
        expect(row.demonstrations).toEqual(expected[i].positions.map((p) => pools[i][p]));
      });
    }
    // Not one fixed set of rows for every query (docs/selector.md, "Differences").
    expect(new Set(rows.filter((r) => r.shot === 1).map((r) => r.demonstrations[0])).size).toBeGreaterThan(5);
    expect(summaryCells(result.summary).some((c) => c.retriever === label && c.comparison !== null)).toBe(true);
  });

  it("refuses embeddings whose width is not the checkpoint's d, naming the checkpoint", () => {
    const narrow = {
      query: () => ({ ids: ["1"], dim: 32, data: new Float32Array(32) }),
      index: () => ({ ids: ["1"], dim: 32, data: new Float32Array(32) }),
    };
    expect(() => loadSelector(ckpt, {}, narrow)).toThrow(/sel\.safetensors.*field "config\.d".*d=64.*dim 32/);
  });

  it("refuses, in one line each, a selector reading candidate data without the index's items, and identities learned on another index", () => {
    const val = sim.ws.loadItems("val");
    const config = SelectorConfigSchema.parse({
      d: 64,
      hidden: 32,
      shots: 4,
      identity: "embedding",
      indexItems: val.length,
    });
    const learnedOnVal = join(sim.dir, "identity-val.safetensors");
    saveCheckpoint(learnedOnVal, {
      config,
      params: initParams(config, 11),
      trainedK: 12,
      shots: 4,
      provenance: { stage: "init", createdAt: "2026-01-01T00:00:00Z" },
      index: indexIdentity("val", val),
    });
    const noItems = leverErrorOf(() => loadSelector(learnedOnVal, {}, embeddings()));
    expect(noItems.message).toMatch(
      /^\/.*identity-val\.safetensors, field "config": this selector reads its candidates' answers or identities, which need the index dataset's annotations; use it where/,
    );
    const withTrain = { ...embeddings(), indexItems: () => ({ dataset: "train", items: sim.ws.loadItems("train") }) };
    const otherIndex = leverErrorOf(() => loadSelector(learnedOnVal, {}, withTrain));
    expect(otherIndex.message).toMatch(
      /^checkpoint .*identity-val\.safetensors learned identities of index val \(30 items, hash [0-9a-f]{64}\); this run's index is train \(200 items, hash [0-9a-f]{64}\) — use that index or train without identity$/,
    );
    for (const error of [noItems, otherIndex]) expect(error.message).not.toContain("\n");
  });
});
