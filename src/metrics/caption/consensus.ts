/**
 * Caption consensus (docs/captioning.md): how well each caption of a set agrees with the others,
 *
 *   consensus_k = (1 / (n − 1)) Σ_{j ≠ k} CIDEr-D(caption_k; caption_j)
 *
 * = the CIDEr-D of caption k with the other n − 1 captions as its references, under fixed document
 * frequencies (`df`, e.g. the index's references). Read by the `consensus` baseline retriever
 * (src/eval/consensus.ts) and the selector's `consensus` candidate feature (src/icl/candidates.ts),
 * for the captions a query's pool shows. A set of one caption has consensus 0.
 */
import { type CiderVector, ciderPair, ciderVector, type DocumentFrequency, documentFrequency } from "./cider.js";
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

/**
 * CIDEr-D vectors of captions by id, built once each under the document frequencies of
 * `referenceSets` (every item's references: the `fixed` mode of rewards).
 */
export function captionVectors(
  referenceSets: readonly (readonly string[])[],
): (id: string, caption: string) => CiderVector {
  let df: DocumentFrequency | undefined;
  const cache = new Map<string, CiderVector>();
  return (id, caption) => {
    let v = cache.get(id);
    if (v === undefined) {
      df ??= documentFrequency(referenceSets.map((refs) => refs.map(tokenizeCaption)));
      cache.set(id, (v = ciderVector(tokenizeCaption(caption), df)));
    }
    return v;
  };
}
