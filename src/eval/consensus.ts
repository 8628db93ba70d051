/**
 * The `consensus` baseline retriever (no training; captions — the caption analogue of the VQA `vote`,
 * docs/captioning.md): the query's pool — the same pool the selectors choose from — ranked by how well
 * each candidate's shown caption agrees with the OTHER candidates' shown captions:
 *
 *   consensus_k = (1 / (K − 1)) Σ_{j ≠ k} CIDEr-D(caption_k; caption_j)
 *
 * i.e. the CIDEr-D of caption k with the other K − 1 captions as its references, with document
 * frequencies fixed from the index's references (the rewards' `fixed` mode). A caption most of its
 * similar neighbours would agree with is a typical, well-formed COCO caption of this kind of image —
 * a teacher of the expected style, length and vocabulary — while an idiosyncratic one scores low.
 * Highest first, ties by pool order; the first `shots` in selection order, so under the default prompt
 * order the most typical caption sits next to the query. No weights, no scale: only captions are read
 * (never the query's), each candidate's vector is built once.
 */
import type { VqaItem } from "../data/item.js";
import { captionVectors, consensusScores } from "../metrics/caption/consensus.js";
import { LeverError } from "../util/errors.js";
import type { PoolChooser } from "./retrievers.js";

/** The consensus retriever's choice within a query's pool (selection order). */
export function consensusChooser(index: readonly VqaItem[]): PoolChooser {
  const byId = new Map(index.map((item) => [item.questionId, item]));
  const vectors = captionVectors(index.map((item) => item.answers.map((a) => a.answer)));
  const vectorOf = (id: string) => {
    const item = byId.get(id);
    if (item === undefined) throw new LeverError("pool candidate is not in the index dataset", { record: id });
    return vectors(id, item.answer);
  };
  // A query's pool is one array for every shot count (memoizePools), so each pool is ranked once.
  const ranked = new WeakMap<readonly string[], { queryId: string; order: string[] }>();
  return (query, pool, shots) => {
    const seen = ranked.get(pool);
    let order = seen?.queryId === query.questionId ? seen.order : undefined;
    if (order === undefined) {
      const scores = consensusScores(pool.map(vectorOf));
      order = pool
        .map((id, p) => ({ id, p, s: scores[p] }))
        .sort((a, b) => b.s - a.s || a.p - b.p)
        .map((c) => c.id);
      ranked.set(pool, { queryId: query.questionId, order });
    }
    return order.slice(0, shots);
  };
}
