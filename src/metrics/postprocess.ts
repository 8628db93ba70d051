/**
 * Post-processing of a generated VQA answer before scoring. One function, used identically by
 * rollout rewards and final evaluation (docs/architecture.md, "One answering path").
 *
 * "lever-plus" = Lever-Plus `vqa_postprocess` (docs/provenance.md#postprocess) = OpenFlamingo
 * `postprocess_vqa_generation` (mlfoundations/open_flamingo open_flamingo/eval/vqa_metric.py at 200a966):
 *   None → ""; `re.split("Question|Answer|Short", text, 1)[0]` (case-sensitive: the text before the
 *   first of these words, which is where a completion-style model starts the next demonstration);
 *   then `re.split(", ", ans, 1)[0]` (the text before the first comma-space).
 * Our addition, in both rules: surrounding whitespace/newlines are trimmed at the end (the VQA
 * metric strips anyway, so scores are unchanged; stored predictions are just cleaner).
 */
export const POSTPROCESS_RULES = ["lever-plus", "raw"] as const;
export type PostprocessRule = (typeof POSTPROCESS_RULES)[number];

const STOP_WORD = /Question|Answer|Short/;

export function postprocessVqaAnswer(text: string | null | undefined, rule: PostprocessRule = "lever-plus"): string {
  const raw = text ?? "";
  switch (rule) {
    case "lever-plus": {
      const beforeStopWord = raw.split(STOP_WORD, 1)[0];
      const beforeComma = beforeStopWord.split(", ", 1)[0];
      return beforeComma.trim();
    }
    case "raw":
      return raw.trim();
    default:
      throw new RangeError(`unknown post-processing rule "${rule as string}"`);
  }
}
