/**
 * Caption consensus (docs/captioning.md): how well each caption of a set agrees with the others,
 *
 *   consensus_k = (1 / (n − 1)) Σ_{j ≠ k} CIDEr-D(caption_k; caption_j)
 *
 * = the CIDEr-D of caption k with the other n − 1 captions as its references, under fixed document
 * frequencies (the index's references: the `fixed` mode of rewards). Read by the `consensus` baseline
 * retriever (src/eval/consensus.ts) and the selector's `consensus` candidate feature
 * (src/icl/candidate-data.ts), for the captions a query's pool shows. A set of one caption has consensus 0.
 *
 * `poolConsensus(items)` is one scorer per index item list (memoised on the array): the retriever and
 * every selector of an evaluation share the document frequencies, each caption's vector and each
 * pool's scores, so a pool is scored once however many methods read it.
 */
import { type CiderVector, ciderPair, ciderVector, documentFrequency } from "./cider.js";
import { tokenizeCaption } from "./ptb-tokenize.js";

/** Each caption's consensus with the others (input order). */
export function consensusScores(vectors: readonly CiderVector[]): number[] {
  const n = vectors.length;
  const sums = new Float64Array(n);
  for (let a = 0; a < n; a++)
    for (let b = a + 1; b < n; b++) {
      sums[a] += ciderPair(vectors[a], vectors[b]);
      sums[b] += ciderPair(vectors[b], vectors[a]);
    }
  return Array.from(sums, (s) => (n > 1 ? s / (n - 1) : 0));
}

/** An index item as consensus reads it: its id, the caption it shows, its references. */
export interface ConsensusItem {
  questionId: string;
  answer: string;
  answers: readonly { answer: string }[];
}

export interface PoolConsensus {
  /** The consensus of each pool member's shown caption (pool order); undefined for an id not in the items. */
  scores(pool: readonly string[]): number[] | undefined;
}

const scorers = new WeakMap<readonly ConsensusItem[], PoolConsensus>();

/** The consensus scorer of an index (document frequencies from its references), shared per item list. */
export function poolConsensus(items: readonly ConsensusItem[]): PoolConsensus {
  const known = scorers.get(items);
  if (known !== undefined) return known;
  const byId = new Map(items.map((item) => [item.questionId, item]));
  let vectorOf: ((id: string) => CiderVector) | undefined;
  const pools = new Map<string, number[]>();
  const scorer: PoolConsensus = {
    scores(pool) {
      const key = pool.join("\u0000");
      const cached = pools.get(key);
      if (cached !== undefined) return cached;
      if (pool.some((id) => !byId.has(id))) return undefined;
      vectorOf ??= vectorsOf(items, byId);
      const scores = consensusScores(pool.map(vectorOf));
      pools.set(key, scores);
      return scores;
    },
  };
  scorers.set(items, scorer);
  return scorer;
}

function vectorsOf(items: readonly ConsensusItem[], byId: ReadonlyMap<string, ConsensusItem>) {
  const df = documentFrequency(items.map((item) => item.answers.map((a) => tokenizeCaption(a.answer))));
  const vectors = new Map<string, CiderVector>();
  return (id: string): CiderVector => {
    let v = vectors.get(id);
    if (v === undefined)
      vectors.set(id, (v = ciderVector(tokenizeCaption((byId.get(id) as ConsensusItem).answer), df)));
    return v;
  };
}
