/**
 * CIDEr-D exactly as coco-caption computes its headline "CIDEr": salaniz/pycocoevalcap at ad63453,
 * cider/cider.py and cider/cider_scorer.py (Vedantam and Lin). That folder is named CIDEr and its
 * `method()` says "CIDEr", but the code is CIDEr-D (Vedantam et al. 2015, arXiv:1411.5726 §4.4):
 * clipped n-gram weights (the "vrama91: added clipping" line), a Gaussian length penalty with σ = 6,
 * and ×10. What is implemented here is that code, line by line:
 *
 *   - words by `split()`; n-gram counts for n = 1..4 (`precook`);
 *   - idf: `ref_len − log(max(1, df(g)))`, where df(g) is the number of images whose references
 *     contain g at least once and ref_len = log(number of images) — both from the references of the
 *     images being scored (`corpus`, pycocoevalcap's only mode), or given from an external reference
 *     set (`fixed`, as the vrama91/cider repo's "coco-val-df" mode: per-item rewards and subsets);
 *   - per n: vec[g] = tf(g)·idf(g), norm = √Σ vec², and the caption "length" — quirk kept — is the
 *     number of BIGRAMS (`if n == 1: length += term_freq`, n being the 0-based index), i.e.
 *     words − 1, or 0 for captions of 0 or 1 word;
 *   - per reference, per n: Σ_{g in hyp} min(vec_hyp[g], vec_ref[g])·vec_ref[g], divided by
 *     norm_hyp·norm_ref when both are non-zero, times e^(−(len_hyp − len_ref)²/(2σ²)) (penalty applied
 *     even to a zero similarity);
 *   - image score = 10 · mean over n of (Σ over references) / #references; corpus = numpy's mean.
 *
 * Floating-point operations follow the Python's order (dict insertion order, numpy's mean), so
 * results agree with pycocoevalcap to the last bits barring libm's log/pow (tested to 1e-9).
 */
import { LeverError } from "../../util/errors.js";
import { ngramCounts, pythonSplit } from "./ngrams.js";
import { numpyMean } from "./numpy-mean.js";
import type { CaptionImage } from "./types.js";

const N = 4;
const SIGMA = 6;

/** Document frequencies of a reference set: per n-gram, the number of images whose references hold it. */
export interface DocumentFrequency {
  /** n-gram (words joined by one space) → number of images. */
  counts: ReadonlyMap<string, number>;
  /** The number of images of the reference set (ref_len is its log). */
  images: number;
}

/** `compute_doc_freq` over a reference set given as each image's references. */
export function documentFrequency(referenceSets: readonly (readonly string[])[]): DocumentFrequency {
  const counts = new Map<string, number>();
  for (const references of referenceSets) {
    const seen = new Set<string>();
    for (const reference of references)
      for (const grams of ngramCounts(pythonSplit(reference), N)) for (const gram of grams.keys()) seen.add(gram);
    for (const gram of seen) counts.set(gram, (counts.get(gram) ?? 0) + 1);
  }
  return { counts, images: referenceSets.length };
}

/** A tokenized caption as CIDEr-D sees it under one set of document frequencies (`counts2vec`). */
export interface CiderVector {
  vec: Map<string, number>[];
  norm: number[];
  length: number;
}
type Vector = CiderVector;

/** The vector of a tokenized caption under `df` (its ref_len = log of df's image count). */
export function ciderVector(tokenized: string, df: DocumentFrequency): CiderVector {
  return toVector(ngramCounts(pythonSplit(tokenized), N), df, Math.log(df.images));
}

/**
 * CIDEr-D of one hypothesis against ONE reference, both as vectors: 10 × the mean over n of the
 * clipped, length-penalised cosine. An image's CIDEr-D is the mean of this over its references
 * (`imageScore` computes it so), which lets callers that compare many captions pairwise build each
 * vector once (the caption consensus, src/eval/consensus.ts).
 */
export function ciderPair(hypothesis: CiderVector, reference: CiderVector): number {
  return numpyMean(similarity(hypothesis, reference)) * 10;
}

/** `counts2vec`: tf-idf per n, the norms, and the bigram-count "length". */
function toVector(counts: Map<string, number>[], df: DocumentFrequency, refLen: number): Vector {
  const vec = counts.map(() => new Map<string, number>());
  const norm = new Array<number>(N).fill(0);
  let length = 0;
  counts.forEach((grams, n) => {
    for (const [gram, tf] of grams) {
      const value = tf * (refLen - Math.log(Math.max(1, df.counts.get(gram) ?? 0)));
      vec[n].set(gram, value);
      norm[n] += value ** 2;
      if (n === 1) length += tf;
    }
  });
  return { vec, norm: norm.map(Math.sqrt), length };
}

/** `sim`: the per-n clipped cosine with the Gaussian length penalty. */
function similarity(hyp: Vector, ref: Vector): number[] {
  const delta = hyp.length - ref.length;
  const penalty = Math.E ** (-(delta ** 2) / (2 * SIGMA ** 2));
  return hyp.vec.map((grams, n) => {
    let value = 0;
    for (const [gram, weight] of grams) {
      const refWeight = ref.vec[n].get(gram) ?? 0;
      value += Math.min(weight, refWeight) * refWeight;
    }
    if (hyp.norm[n] !== 0 && ref.norm[n] !== 0) value /= hyp.norm[n] * ref.norm[n];
    return value * penalty;
  });
}

/** One image's CIDEr-D (`compute_cider`'s loop body). */
function imageScore(image: CaptionImage, df: DocumentFrequency, refLen: number): number {
  return ciderOfVectors(
    toVector(ngramCounts(pythonSplit(image.hypothesis), N), df, refLen),
    image.references.map((reference) => toVector(ngramCounts(pythonSplit(reference), N), df, refLen)),
  );
}

/**
 * One image's CIDEr-D from its vectors, in pycocoevalcap's order of operations (per-n sums over the
 * references, their mean, / #references, × 10): callers that score many hypotheses against the same
 * references build the reference vectors once (src/task/caption-scoring.ts) and get the same bits.
 */
export function ciderOfVectors(hyp: CiderVector, references: readonly CiderVector[]): number {
  const sums = new Array<number>(N).fill(0);
  for (const ref of references) {
    const sim = similarity(hyp, ref);
    for (let n = 0; n < N; n++) sums[n] += sim[n];
  }
  return (numpyMean(sums) / references.length) * 10;
}

export interface CiderScores {
  corpus: number;
  perImage: number[];
}

export const CIDER_DF_MODES = ["corpus", "fixed"] as const;
export type CiderDfMode = (typeof CIDER_DF_MODES)[number];

/**
 * CIDEr-D of the images. Without `df`, pycocoevalcap's corpus mode: document frequencies from the
 * scored images' own references, which needs at least two images (with one, ref_len = log 1 = 0 and
 * every weight is 0). With `df`, the fixed mode: frequencies and reference count from that set.
 */
export function ciderScores(images: readonly CaptionImage[], df?: DocumentFrequency): CiderScores {
  if (df === undefined && images.length < 2)
    throw new LeverError(
      `CIDEr-D with corpus document frequencies needs at least two images (got ${images.length}): with one, log(1) = 0 makes every score 0; use fixed document frequencies from a reference set (lever metric caption --df fixed)`,
    );
  const frequencies = df ?? documentFrequency(images.map((image) => image.references));
  if (frequencies.images < 1) throw new LeverError("CIDEr-D document frequencies come from an empty reference set");
  const refLen = Math.log(frequencies.images);
  const perImage = images.map((image) => imageScore(image, frequencies, refLen));
  return { corpus: numpyMean(perImage), perImage };
}
