/**
 * ROUGE-L exactly as coco-caption computes it: salaniz/pycocoevalcap at ad63453, rouge/rouge.py
 * (Vedantam; Lin 2004 with β = 1.2).
 *
 * Per image: words by `split(" ")` — one space exactly, so "" is one empty word and the denominators
 * are never 0; for every reference, LCS = length of the longest common subsequence of reference and
 * hypothesis words, precision = LCS/|hyp|, recall = LCS/|ref|; then P = max precision and R = max
 * recall, taken SEPARATELY over the references (not the F of the best reference), and
 *   score = (1 + β²)·P·R / (R + β²·P), or 0 when P or R is 0.
 * Corpus: numpy's mean of the per-image scores.
 */
import { numpyMean } from "./numpy-mean.js";
import type { CaptionImage } from "./types.js";

const BETA = 1.2;

/** `my_lcs`: length of the longest common subsequence of two word lists. */
export function lcsLength(a: readonly string[], b: readonly string[]): number {
  const [long, short] = a.length < b.length ? [b, a] : [a, b];
  let previous = new Array<number>(short.length + 1).fill(0);
  for (let i = 1; i <= long.length; i++) {
    const row = new Array<number>(short.length + 1).fill(0);
    for (let j = 1; j <= short.length; j++)
      row[j] = long[i - 1] === short[j - 1] ? previous[j - 1] + 1 : Math.max(previous[j], row[j - 1]);
    previous = row;
  }
  return previous[short.length];
}

/** `calc_score`: one image's ROUGE-L. */
export function rougeL(hypothesis: string, references: readonly string[]): number {
  const candidate = hypothesis.split(" ");
  let precision = -Infinity;
  let recall = -Infinity;
  for (const reference of references) {
    const words = reference.split(" ");
    const lcs = lcsLength(words, candidate);
    precision = Math.max(precision, lcs / candidate.length);
    recall = Math.max(recall, lcs / words.length);
  }
  if (precision === 0 || recall === 0) return 0;
  return ((1 + BETA ** 2) * precision * recall) / (recall + BETA ** 2 * precision);
}

export interface RougeScores {
  corpus: number;
  perImage: number[];
}

/** Corpus (mean) and per-image ROUGE-L, as pycocoevalcap's `Rouge().compute_score`. */
export function rougeScores(images: readonly CaptionImage[]): RougeScores {
  const perImage = images.map((image) => rougeL(image.hypothesis, image.references));
  return { corpus: numpyMean(perImage), perImage };
}
