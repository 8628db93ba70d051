/**
 * How the caption task scores a generated caption (src/task/types.ts `answering`), shared by rewards
 * and evaluation:
 *
 *   - post-processing (`postprocessCaption`): the first line of the text, trimmed; a leading
 *     "Caption:" label the model may repeat is removed. Nothing else — the metric's PTB tokenizer
 *     lower-cases and splits punctuation itself (src/metrics/caption/ptb-tokenize.ts), and cutting at a
 *     comma (VQA's rule) would cut captions in half.
 *   - the per-item score: CIDEr-D of the processed caption against the image's references
 *     (pycocoevalcap's formula, src/metrics/caption/cider.ts), both PTB-tokenized, with document
 *     frequencies from the scope's reference set. Evaluation gives the evaluated images: that is
 *     pycocoevalcap's corpus mode, so the mean of the per-image scores IS the reported CIDEr-D
 *     (×100 as printed). Rewards give the index: the `fixed` mode, where a score does not depend on
 *     which other queries happen to be scored.
 *
 * Values are pycocoevalcap's per-image numbers (×10 inside, in [0, 10]).
 */
import {
  type CiderVector,
  ciderOfVectors,
  ciderVector,
  type DocumentFrequency,
  documentFrequency,
} from "../metrics/caption/cider.js";
import { tokenizeCaption } from "../metrics/caption/ptb-tokenize.js";
import { LeverError } from "../util/errors.js";
import type { AnswerScoring, ScoringScope, StoredItem } from "./types.js";

const LABEL = /^\s*caption\s*:\s*/i;

/** The caption a generated text holds: its first non-empty line, trimmed, without a leading "Caption:". */
export function postprocessCaption(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
  return line.replace(LABEL, "").trim();
}

/** The tokenized references of an item (the stored annotator answers). */
function references(item: StoredItem): string[] {
  return item.answers.map((a) => tokenizeCaption(a.answer));
}

/** CIDEr-D scorer with document frequencies from `scope.references` (memoised tokenization per item). */
export function captionAnswering(scope: Pick<ScoringScope, "references">): AnswerScoring {
  if (scope.references.length === 0)
    throw new LeverError("CIDEr-D needs a reference set for its document frequencies (no items given)");
  const tokenized = new Map<string, string[]>();
  const refsOf = (item: StoredItem) => {
    let refs = tokenized.get(item.questionId);
    if (refs === undefined) tokenized.set(item.questionId, (refs = references(item)));
    return refs;
  };
  const df: DocumentFrequency = documentFrequency(scope.references.map(refsOf));
  // Each query's reference vectors once (rollouts and evaluation score many captions per query).
  const vectors = new Map<string, CiderVector[]>();
  const vectorsOf = (item: StoredItem) => {
    let v = vectors.get(item.questionId);
    if (v === undefined) vectors.set(item.questionId, (v = refsOf(item).map((r) => ciderVector(r, df))));
    return v;
  };
  return {
    postprocess: postprocessCaption,
    gtAnswerSet: (setting) => (setting === "none" ? "none" : "majority"),
    score: (answer, query) => ciderOfVectors(ciderVector(tokenizeCaption(answer), df), vectorsOf(query)),
  };
}
