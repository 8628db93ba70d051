/**
 * Readable chart titles for the metric names training and data generation log (`loss`, `gradNorm`,
 * `epoch.valAccuracyGain`, `entropy@2`): camelCase split into words, common abbreviations spelt out,
 * `epoch.` as "(per epoch)", `@k` as "at position k". The raw name stays in the chart's caption, so a
 * chart can still be matched to the metrics table, TensorBoard tags and `--json`.
 */

const WORDS: Record<string, string> = {
  val: "validation",
  lr: "learning rate",
  grad: "gradient",
  kl: "KL",
  rce: "RCE",
  grpo: "GRPO",
  sft: "SFT",
  vlm: "VLM",
  std: "std",
  acc: "accuracy",
  top1: "top-1",
  ess: "ESS",
};

/** "epoch.valAccuracyGain" → "Validation accuracy gain (per epoch)"; "entropy@2" → "Entropy at position 2". */
export function metricTitle(name: string): string {
  const perEpoch = name.startsWith("epoch.");
  const base = perEpoch ? name.slice("epoch.".length) : name;
  const [stem, position] = base.split("@", 2);
  const words = stem
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[\s._-]+/)
    .filter(Boolean)
    .map((w) => WORDS[w.toLowerCase()] ?? w.toLowerCase());
  const text = [words.join(" "), position === undefined ? "" : ` at position ${position}`].join("");
  const title = text.length === 0 ? name : text.charAt(0).toUpperCase() + text.slice(1);
  return perEpoch ? `${title} (per epoch)` : title;
}

/** What a stage's charts are headed with: "SFT", "GRPO", or the stage's own name. */
export function stageTitle(stage: string): string {
  return WORDS[stage.toLowerCase()] ?? stage;
}
