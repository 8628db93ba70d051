/**
 * The word and n-gram views pycocoevalcap's scorers take of a tokenized caption (salaniz/pycocoevalcap
 * at ad63453, bleu/bleu_scorer.py and cider/cider_scorer.py `precook`): `s.split()` (Python's
 * whitespace split: runs of whitespace, no empty words) and, for k = 1..n, the count of every k-gram
 * in the order Python's dict first meets it (k outer, position inner). ROUGE-L splits differently
 * (`split(" ")`, so "" is one empty word); see rouge.ts.
 */

/** The characters Python's `str.split()` splits on (`str.isspace`), as a regex run. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: Python's isspace includes U+001C–U+001F
const PYTHON_WHITESPACE = /[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** Python's `s.split()`. */
export function pythonSplit(s: string): string[] {
  return s.split(PYTHON_WHITESPACE).filter((word) => word.length > 0);
}

/**
 * `precook`'s counts, one map per n-gram length: `counts[k - 1]` maps each k-gram (its words joined
 * by one space, unambiguous because words hold no whitespace) to its count, in first-seen order.
 */
export function ngramCounts(words: readonly string[], n = 4): Map<string, number>[] {
  const counts: Map<string, number>[] = [];
  for (let k = 1; k <= n; k++) {
    const grams = new Map<string, number>();
    for (let i = 0; i + k <= words.length; i++) {
      const gram = words.slice(i, i + k).join(" ");
      grams.set(gram, (grams.get(gram) ?? 0) + 1);
    }
    counts.push(grams);
  }
  return counts;
}
