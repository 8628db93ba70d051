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
import { poolConsensus } from "../metrics/caption/consensus.js";
import { LeverError } from "../util/errors.js";
import type { PoolChooser } from "./retrievers.js";

/** The consensus retriever's choice within a query's pool (selection order). */
export function consensusChooser(index: readonly VqaItem[]): PoolChooser {
  const consensus = poolConsensus(index);
  return (query, pool, shots) => {
    const scores = consensus.scores(pool);
    if (scores === undefined)
      throw new LeverError("a pool candidate is not in the index dataset", { record: query.questionId, field: "pool" });
    return pool
      .map((id, p) => ({ id, p, s: scores[p] }))
      .sort((a, b) => b.s - a.s || a.p - b.p)
      .slice(0, shots)
      .map((c) => c.id);
  };
}
