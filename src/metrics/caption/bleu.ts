/**
 * BLEU-1..4 exactly as coco-caption computes it: salaniz/pycocoevalcap at ad63453, bleu/bleu.py
 * (`compute_score(option='closest')`) and bleu/bleu_scorer.py (David Chiang's scorer as modified by
 * Hao Fang and Tsung-Yi Lin).
 *
 * Per image: words by `split()`; clipped n-gram matches `correct[k]` = Σ min(max count in any one
 * reference, count in the hypothesis); `guess[k]` = max(0, len − k); the reference length is the
 * "closest" one (smallest |ref − hyp|, ties to the shorter reference).
 * Corpus: the counts and lengths summed over images, then
 *   bleu_k = (Π_{j≤k} (correct_j + 1e-15) / (guess_j + 1e-9))^(1/k),
 * times the brevity penalty exp(1 − 1/ratio) when ratio = (testlen + 1e-15)/(reflen + 1e-9) < 1
 * (the "tiny" and "small" constants keep an empty hypothesis at 0 instead of dividing by 0). Per image: the same formula on that image's counts
 * (pycocoevalcap's `bleu_list`, the per-image scores coco-caption stores).
 */
import { ngramCounts, pythonSplit } from "./ngrams.js";
import type { CaptionImage } from "./types.js";

const N = 4;
const SMALL = 1e-9;
const TINY = 1e-15;

interface Cooked {
  testlen: number;
  reflen: number;
  guess: number[];
  correct: number[];
}

export interface BleuScores {
  /** BLEU-1..4 over the corpus, fractions in [0, 1]. */
  corpus: number[];
  /** perImage[k][i]: BLEU-(k+1) of image i. */
  perImage: number[][];
}

/** `cook_refs` + `cook_test` with eff = "closest". */
function cook(image: CaptionImage): Cooked {
  const maxCounts = new Map<string, number>();
  const refLengths: number[] = [];
  for (const reference of image.references) {
    const words = pythonSplit(reference);
    refLengths.push(words.length);
    for (const grams of ngramCounts(words, N))
      for (const [gram, count] of grams) maxCounts.set(gram, Math.max(maxCounts.get(gram) ?? 0, count));
  }
  const words = pythonSplit(image.hypothesis);
  const testlen = words.length;
  // min((abs(l - testlen), l) for l in reflen)[1]: nearest length, ties to the shorter.
  let reflen = refLengths[0];
  for (const l of refLengths) {
    const [d, best] = [Math.abs(l - testlen), Math.abs(reflen - testlen)];
    if (d < best || (d === best && l < reflen)) reflen = l;
  }
  const correct = ngramCounts(words, N).map((grams) => {
    let sum = 0;
    for (const [gram, count] of grams) sum += Math.min(maxCounts.get(gram) ?? 0, count);
    return sum;
  });
  const guess = Array.from({ length: N }, (_, k) => Math.max(0, testlen - k));
  return { testlen, reflen, guess, correct };
}

/** The BLEU-1..4 of summed counts, as `compute_score` computes both the corpus and each image. */
function bleuOf(correct: readonly number[], guess: readonly number[], testlen: number, reflen: number): number[] {
  const bleus: number[] = [];
  let bleu = 1;
  for (let k = 0; k < N; k++) {
    bleu *= (correct[k] + TINY) / (guess[k] + SMALL);
    bleus.push(bleu ** (1 / (k + 1)));
  }
  const ratio = (testlen + TINY) / (reflen + SMALL);
  if (ratio < 1) for (let k = 0; k < N; k++) bleus[k] *= Math.exp(1 - 1 / ratio);
  return bleus;
}

/** Corpus and per-image BLEU-1..4 of the images, as pycocoevalcap's `Bleu(4).compute_score`. */
export function bleuScores(images: readonly CaptionImage[]): BleuScores {
  const perImage: number[][] = Array.from({ length: N }, () => []);
  const totals = { testlen: 0, reflen: 0, guess: new Array<number>(N).fill(0), correct: new Array<number>(N).fill(0) };
  for (const image of images) {
    const cooked = cook(image);
    totals.testlen += cooked.testlen;
    totals.reflen += cooked.reflen;
    for (let k = 0; k < N; k++) {
      totals.guess[k] += cooked.guess[k];
      totals.correct[k] += cooked.correct[k];
    }
    const bleus = bleuOf(cooked.correct, cooked.guess, cooked.testlen, cooked.reflen);
    for (let k = 0; k < N; k++) perImage[k].push(bleus[k]);
  }
  return { corpus: bleuOf(totals.correct, totals.guess, totals.testlen, totals.reflen), perImage };
}
