/**
 * The whole-index projections `lever serve` computes once at start-up (`encodeIndex`) choose exactly what
 * the per-batch projections `lever eval` computes choose — same demonstrations in the same order, the same
 * log-probability up to float32 rounding — for every selector option that reads the candidate table (the cosine and rank priors,
 * centring, answer features, pool attention, the redundancy penalty), and the screening GEMM
 * (`gemmScreen`) gives the pools `gemmNT` gives.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { EmbeddingMatrix } from "../../src/data/embeddings.js";
import type { VqaItem } from "../../src/data/item.js";
import { openSelector } from "../../src/icl/selector.js";
import { PoolBuilder } from "../../src/pools/samplers.js";
import { gemmNT, gemmScreen } from "../../src/pools/search.js";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { encodeIndex, type SelectionContext, type ServedQuery, selectBatch } from "../../src/serve/selection.js";
import { Rng } from "../../src/util/rng.js";

const N = 1500;
const DIM = 24;
const dir = mkdtempSync(join(tmpdir(), "lever-serve-selection-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rng = new Rng(41).child("serve-selection");
const rows = (n: number) => Float32Array.from({ length: n * DIM }, () => rng.normal());
const words = ["yes", "no", "two", "red", "dog", "cat"];
const items: VqaItem[] = Array.from({ length: N }, (_, i) => {
  const answers = Array.from({ length: 10 }, () => ({ answer: words[rng.int(words.length)] }));
  return {
    questionId: String(i),
    imageId: String(i),
    question: `question ${i}?`,
    answers,
    answer: answers[0].answer,
    questionType: "what",
    answerType: "other",
    imagePath: `/images/${i % 50}.jpg`,
  };
});
const matrix: EmbeddingMatrix = { ids: items.map((i) => i.questionId), dim: DIM, data: rows(N) };
const queryRows = rows(48);
const queries: ServedQuery[] = Array.from({ length: 48 }, (_, q) => ({
  question: `served ${q}?`,
  imageKey: "query-image",
  embeddings: { joint: queryRows.slice(q * DIM, (q + 1) * DIM) },
  shots: q % 5, // 0 (zero-shot) to 4
}));

function context(options: Record<string, unknown>, seed: number): SelectionContext {
  const config = SelectorConfigSchema.parse({ d: DIM, hidden: 16, shots: 4, dropout: 0, attnDropout: 0, ...options });
  const file = join(dir, `selector-${seed}.safetensors`);
  saveCheckpoint(file, {
    config,
    params: initParams(config, seed),
    trainedK: 20,
    shots: 4,
    provenance: {
      stage: "init",
      createdAt: "2026-01-01T00:00:00Z",
      notes: { poolSampler: "joint-sim", embedding: "joint" },
    },
  });
  const selector = openSelector(
    file,
    {},
    { query: () => matrix, index: () => matrix, indexItems: () => ({ dataset: "index", items }) },
  );
  return {
    selector,
    builder: new PoolBuilder({ index: items, indexEmbeddings: { joint: matrix }, gemm: gemmNT }),
    indexById: new Map(items.map((i) => [i.questionId, i])),
    sampler: selector.sampler,
    k: selector.k,
    seed: 0,
    order: "nearest",
  };
}

/** Every query's demonstrations and log-probability, in batches of 30, 17 and 1. */
const chosen = (ctx: SelectionContext) =>
  [selectBatch(ctx, queries.slice(0, 30)), selectBatch(ctx, queries.slice(30)), selectBatch(ctx, queries.slice(7, 8))]
    .flat()
    .map((s) => ({ ids: s.demonstrations.map((d) => d.id), logprob: s.logprob }));

describe("lever serve's whole-index projections", () => {
  const options: Record<string, unknown>[] = [
    {},
    { prior: "cosine", center: "index-mean", features: ["vote", "agreement"] },
    { prior: "rank", features: ["vote", "agreement", "consensus"] },
    { prior: "cosine", redundancy: "max" },
    { features: ["vote"], poolAttention: 1 },
    { center: "index-mean", stepEmbedding: true, stateUpdate: "gate" },
  ];
  for (const [i, option] of options.entries())
    it(`choose what per-batch projections choose: ${JSON.stringify(option)}`, () => {
      const ctx = context(option, 7 + i);
      const perBatch = chosen(ctx);
      const served = chosen({
        ...ctx,
        table: encodeIndex(ctx.selector),
        builder: new PoolBuilder({ index: items, indexEmbeddings: { joint: matrix }, gemm: gemmScreen }),
      });
      // The same demonstrations in the same order; the log-probability to float32 rounding (bit for bit with
      // our own GEMM; an OpenBLAS build rounds a product differently with its size, as evaluation's own
      // batches of different sizes do).
      expect(served.map((s) => s.ids)).toEqual(perBatch.map((s) => s.ids));
      served.forEach((s, q) => {
        if (s.logprob === null) expect(perBatch[q].logprob).toBeNull();
        else expect(s.logprob).toBeCloseTo(perBatch[q].logprob as number, 4);
      });
      expect(served.filter((s) => s.ids.length > 0).length).toBe(39); // every query with shots chose some (10 of the 48 are zero-shot; query 7 twice)
    });
});
