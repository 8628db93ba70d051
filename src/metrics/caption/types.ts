/**
 * What every caption scorer takes: one entry per evaluated image, its hypothesis and its references,
 * all already tokenized (lower-case tokens joined by single spaces, as PTBTokenizer's output reaches
 * pycocoevalcap's scorers). Scores come back in the order of the images.
 */
export interface CaptionImage {
  /** The candidate caption (pycocoevalcap asserts exactly one per image). */
  hypothesis: string;
  /** The reference captions, at least one. */
  references: readonly string[];
}
