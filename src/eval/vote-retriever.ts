/**
 * The `vote` baseline retriever (no training; docs/report.md): the query's pool — the same pool the
 * oracle, the informed ceiling and the selectors choose from — ranked by the answer vote
 * (src/metrics/answer-vote.ts): vote_k, the similarity-weighted share of the OTHER candidates' annotators
 * who give candidate k's normalised answer, highest first, ties by similarity. The first `shots`
 * are returned in selection order, so under the default prompt order the best-supported candidate
 * sits next to the query.
 *
 * Similarity is the cosine on the joint (image + question) embedding: whether two VQA items share an
 * answer depends on both what the image shows and what is asked, and it is the embedding the
 * selectors read by default. Weights depend on the cosines' order only, at the scale ρ the evaluation
 * gives (calibrated per index from its annotations, src/icl/vote-calibration.ts, unless --vote-scale
 * sets it). Only index items' annotations are read — never the query's — and every index item's
 * support is computed once.
 */
import { cosine, type EmbeddingKind, type EmbeddingMatrix, rowIndex } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import {
  type AnswerSupport,
  poolVote,
  supportsOf,
  type VoteWeighting,
  voteOrder,
  voteWeights,
} from "../metrics/answer-vote.js";
import { LeverError } from "../util/errors.js";
import type { PoolChooser } from "./retrievers.js";

/** The embedding the vote weighs candidates with. */
export const VOTE_EMBEDDING: EmbeddingKind = "joint";

export interface VoteSources {
  /** The query dataset's and the index dataset's embeddings of a kind (loaded when first asked for). */
  query: (kind: EmbeddingKind) => EmbeddingMatrix;
  index: (kind: EmbeddingKind) => EmbeddingMatrix;
  /** The index dataset's items (their annotators and shown answers). */
  items: readonly VqaItem[];
  /** The similarity weighting (asked for when the first pool is ranked: calibration reads the index). */
  weighting: () => VoteWeighting;
}

/** The vote retriever's choice within a query's pool (selection order). */
export function voteChooser(sources: VoteSources): PoolChooser {
  let lookup: ((id: string, role: "query" | "index") => Float32Array) | undefined;
  let weighting: VoteWeighting | undefined;
  const supportOf = supportsOf(sources.items);
  const support = (id: string): AnswerSupport => {
    const s = supportOf(id);
    if (s === undefined) throw new LeverError("pool candidate is not in the index dataset", { record: id });
    return s;
  };
  // A query's pool is one array for every shot count (memoizePools), so each pool is ranked once.
  const ranked = new WeakMap<readonly string[], { queryId: string; order: string[] }>();
  return (query, pool, shots) => {
    const seen = ranked.get(pool);
    let order = seen?.queryId === query.questionId ? seen.order : undefined;
    if (order === undefined) {
      const row = (lookup ??= rowLookup(sources.query(VOTE_EMBEDDING), sources.index(VOTE_EMBEDDING)));
      const q = row(query.questionId, "query");
      const similarity = Float64Array.from(pool, (id) => cosine(q, row(id, "index")));
      const { vote } = poolVote(pool.map(support), voteWeights(similarity, (weighting ??= sources.weighting())));
      order = voteOrder(vote, similarity).map((p) => pool[p]);
      ranked.set(pool, { queryId: query.questionId, order });
    }
    return order.slice(0, shots);
  };
}

function rowLookup(query: EmbeddingMatrix, index: EmbeddingMatrix) {
  if (query.dim !== index.dim)
    throw new LeverError(
      `query and index ${VOTE_EMBEDDING} embeddings differ in dimension (${query.dim}, ${index.dim})`,
    );
  const rows = { query: rowIndex(query), index: rowIndex(index) };
  const matrices = { query, index };
  return (id: string, role: "query" | "index"): Float32Array => {
    const r = rows[role].get(id);
    if (r === undefined)
      throw new LeverError(`no ${role} ${VOTE_EMBEDDING} embedding row for this item`, {
        record: id,
        field: "embedding",
      });
    const { data, dim } = matrices[role];
    return data.subarray(r * dim, (r + 1) * dim);
  };
}
