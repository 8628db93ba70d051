/**
 * The vote's scale ρ for an index (src/metrics/answer-vote.ts, `calibrateVoteScale`), reproducible from the
 * index alone: a fixed sample of the index's items (at most `CALIBRATION_QUERIES`, drawn from the
 * stream `Rng(0).child("vote-calibration")`) is treated as queries; each gets its pool from the index
 * through the pool contract (itself and its image's other questions excluded) with the sampler and K
 * the vote will run with, pool seed 0; the cosines to it are over the vote's embedding. No VLM call,
 * no evaluation query, no run seed enters: the same index, embeddings and pool settings give the same
 * ρ in `lever eval` (the `vote` retriever) and in training (the selector's `vote` feature, which then
 * records ρ in its checkpoint). Calibrations are kept per process.
 */
import { cosine, EMBEDDING_KINDS, type EmbeddingKind, type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { calibrateVoteScale, supportsOf, type VoteCalibration } from "../metrics/answer-vote.js";
import { PoolBuilder, type PoolSampler } from "../pools/samplers.js";
import { defaultGemm } from "../pools/search.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { Rng } from "../util/rng.js";

/** Index items the calibration asks (all of a smaller index). */
export const CALIBRATION_QUERIES = 1000;

export interface CalibrationInputs {
  /** The index dataset's name and items (question-id order), for messages and the cache key. */
  dataset: string;
  items: readonly VqaItem[];
  /** The index's embeddings by kind (the pool sampler's kinds and the vote's). */
  embedding: (kind: EmbeddingKind) => EmbeddingMatrix;
  /** The embedding the vote ranks by. */
  kind: EmbeddingKind;
  /** The pool sampler (mix with its shares) and K of the pools the vote is calibrated on. */
  pool: PoolSampler;
  k: number;
  /** Index items never used as calibration queries (the evaluation's own questions when they are the index's). */
  avoid?: ReadonlySet<string>;
}

const calibrations = new Map<string, VoteCalibration>();

/** The calibrated scale and its curve for an index and pool settings (computed once per process). */
export function voteCalibration(inputs: CalibrationInputs): VoteCalibration {
  const { dataset, items, kind, pool, k } = inputs;
  const matrix = inputs.embedding(kind);
  // Keyed by what the calibration reads: the index's items and annotations, its embedding of the vote's kind
  // (a sample of its values), the pool settings and the questions left out.
  const key = hashValue([
    dataset,
    items.map((i) => [i.questionId, i.imageId, i.answer, i.answers.length]),
    matrix.ids.length,
    Array.from({ length: 64 }, (_, j) => matrix.data[Math.floor((j * matrix.data.length) / 64)]),
    kind,
    pool,
    k,
    [...(inputs.avoid ?? [])].sort(),
  ]);
  let c = calibrations.get(key);
  if (c === undefined) {
    c = calibrate(inputs, matrix);
    calibrations.set(key, c);
  }
  return c;
}

function calibrate(inputs: CalibrationInputs, matrix: EmbeddingMatrix): VoteCalibration {
  const { dataset, items, kind, pool, k } = inputs;
  if (items.length <= k)
    throw new LeverError(
      `the index "${dataset}" has ${items.length} items: too few to calibrate a vote over pools of ${k}`,
      {
        field: "k",
      },
    );
  const sample = new Rng(0)
    .child("vote-calibration")
    .shuffle(items.filter((item) => !inputs.avoid?.has(item.questionId)))
    .slice(0, CALIBRATION_QUERIES);
  const embeddings = lazyKinds((k) => (k === kind ? matrix : inputs.embedding(k)));
  const builder = new PoolBuilder({
    index: items,
    indexEmbeddings: embeddings,
    gemm: defaultGemm().gemm,
    indexName: dataset,
  });
  // A query whose image holds too many of the index's questions cannot have K candidates: left out.
  const eligible = sample.filter((q) => items.length - builder.excludedPositions(q).length >= k);
  const pools = builder.build(eligible, { ...pool, k, seed: 0, queryEmbeddings: embeddings });
  const rows = rowIndex(matrix);
  const row = (id: string): Float32Array => {
    const r = rows.get(id);
    if (r === undefined)
      throw new LeverError(`no ${kind} embedding row for this index item`, {
        file: dataset,
        record: id,
        field: "embedding",
      });
    return matrix.data.subarray(r * matrix.dim, (r + 1) * matrix.dim);
  };
  const supportOf = supportsOf(items);
  const byId = new Map(items.map((item) => [item.questionId, item]));
  return calibrateVoteScale(
    eligible.map((query, i) => {
      const q = row(query.questionId);
      return {
        candidates: pools[i].map((id) => supportOf(id) as NonNullable<ReturnType<typeof supportOf>>),
        shown: pools[i].map((id) => (byId.get(id) as VqaItem).answer),
        cosines: Float64Array.from(pools[i], (id) => cosine(q, row(id))),
        annotators: query.answers.map((a) => a.answer),
      };
    }),
  );
}

/** An embedding set whose kinds load when the pool builder first reads them (each once). */
function lazyKinds(embedding: (kind: EmbeddingKind) => EmbeddingMatrix) {
  const set: Partial<Record<EmbeddingKind, EmbeddingMatrix>> = {};
  const loaded = new Map<EmbeddingKind, EmbeddingMatrix>();
  const load = (kind: EmbeddingKind) => {
    let m = loaded.get(kind);
    if (m === undefined) loaded.set(kind, (m = embedding(kind)));
    return m;
  };
  for (const kind of EMBEDDING_KINDS) Object.defineProperty(set, kind, { enumerable: true, get: () => load(kind) });
  return set;
}

/** One line for logs and notes: "vote scale ρ = 4 (calibrated on 1000 index items: ρ 1 52.1 %, …)". */
export function calibrationText(c: VoteCalibration): string {
  const curve = c.accuracy.map((a) => `${a.scale}: ${(100 * a.accuracy).toFixed(1)}`).join(", ");
  return `vote scale ρ = ${c.scale} (calibrated on ${c.queries} index items, first-pick accuracy % by ρ: ${curve})`;
}
