/**
 * What a selector may see about its candidates besides their embeddings (docs/selector.md,
 * "Candidate features, identity, pool attention"), built from the INDEX dataset — the split the
 * candidates come from, whose annotations and identities are known at test time:
 *
 *   vote_k       the similarity-weighted share of the other pool candidates' annotators who give
 *                candidate k's normalised answer, weights exp(−rank/ρ) by the cosine order over the
 *                selector's own input embeddings at the checkpoint's `voteScale` ρ (0: the linear
 *                max(0, cos) of older checkpoints) — src/metrics/answer-vote.ts, the `vote` retriever's formula;
 *   agreement_k  the share of candidate k's own annotators who give the answer it shows;
 *   consensus_k  (captions) 1 − r_k/(K − 1), r_k the candidate's rank (0 the best, ties averaged) in its
 *                pool by caption consensus — the CIDEr-D of its shown caption against the other
 *                candidates' shown captions, document frequencies from the index's references
 *                (src/metrics/caption/consensus.ts, the `consensus` retriever's order). A rank: no scale.
 *   identity     the candidate's row in the index's identity table: its position among the index
 *                dataset's items in question-id order. The table is named by the dataset, its item
 *                count and a sha256 of its ids, recorded in a checkpoint that learned identities.
 *
 * Nothing here reads a query's own annotations: the features of a pool are a function of its
 * candidates' answers and their cosines to the query only (test/icl/candidate-data.test.ts checks that).
 */
import type { EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { type AnswerSupport, poolVote, supportsOf, type VoteWeighting, voteWeights } from "../metrics/answer-vote.js";
import { poolConsensus } from "../metrics/caption/consensus.js";
import { averageRanks } from "../metrics/stats.js";
import { CANDIDATE_FEATURES, type CandidateFeature } from "../selector/config.js";
import { type CandidateSource, FEATURE_COUNT, type IndexIdentity } from "../selector/inputs.js";
import { LeverError } from "../util/errors.js";
import { sha256 } from "../util/hash.js";

/** The identity table of an index dataset: items in question-id order (`loadItems` order). */
export function indexIdentity(dataset: string, items: readonly VqaItem[]): IndexIdentity {
  return { dataset, items: items.length, hash: sha256(items.map((i) => i.questionId).join("\n")) };
}

/** The vote weighting a selector config reads: rank at its `voteScale`, or linear when 0 (older checkpoints). */
export function voteWeightingOf(config: { voteScale: number }): VoteWeighting {
  return config.voteScale > 0 ? { kind: "rank", scale: config.voteScale } : { kind: "linear" };
}

/** Candidate data for the rows of an index embedding matrix, from the index dataset's items. */
export function candidateData(
  dataset: string,
  index: EmbeddingMatrix,
  items: readonly VqaItem[],
  weighting: VoteWeighting,
  /** The features computed (the others stay 0): what the selector reads. */
  reads: readonly CandidateFeature[] = ["vote", "agreement"],
): CandidateSource {
  const position = new Map(items.map((item, i) => [item.questionId, i]));
  const identity = Int32Array.from(index.ids, (id) => position.get(id) ?? -1);
  const supportOf = supportsOf(items);
  const support = (row: number, queryId: string): AnswerSupport => {
    const s = supportOf(index.ids[row]);
    if (s === undefined)
      throw new LeverError(`pool candidate "${index.ids[row]}" is not an item of the index dataset "${dataset}"`, {
        record: queryId,
      });
    return s;
  };
  const F = FEATURE_COUNT;
  const VOTE = CANDIDATE_FEATURES.indexOf("vote");
  const AGREEMENT = CANDIDATE_FEATURES.indexOf("agreement");
  const CONSENSUS = CANDIDATE_FEATURES.indexOf("consensus");
  const readsVote = reads.includes("vote") || reads.includes("agreement");
  const consensus = reads.includes("consensus") ? poolConsensus(items) : undefined;
  return {
    identity,
    index: indexIdentity(dataset, items),
    voteScale: weighting.kind === "rank" ? weighting.scale : 0,
    features(candRows, cosines, at) {
      const K = candRows.length;
      for (const row of candRows)
        if (index.ids[row] === at.queryId)
          throw new LeverError("the query is in its own pool: its own answers would leak into the features", {
            record: at.queryId,
          });
      const out = new Float32Array(K * F);
      if (readsVote) {
        const { vote, agreement } = poolVote(
          Array.from(candRows, (row) => support(row, at.queryId)),
          voteWeights(cosines, weighting),
        );
        for (let k = 0; k < K; k++) {
          out[k * F + VOTE] = vote[k];
          out[k * F + AGREEMENT] = agreement[k];
        }
      }
      if (consensus !== undefined) {
        const scores = consensus.scores(Array.from(candRows, (row) => index.ids[row]));
        if (scores === undefined) {
          for (const row of candRows) support(row, at.queryId); // names the candidate not in the index
          throw new Error("candidateData: a pool candidate has no consensus");
        }
        // averageRanks: 1 the lowest; rank from the top r = K − rank, so the most typical caption gets 1.
        const ranks = averageRanks(scores);
        for (let k = 0; k < K; k++) out[k * F + CONSENSUS] = K > 1 ? (ranks[k] - 1) / (K - 1) : 1;
      }
      return out;
    },
  };
}
