/**
 * The VQA task (src/task/types.ts): VQAv2/OKVQA items with ten annotator answers, the Lever-Plus
 * prompt, five generated tokens, the Lever-Plus answer post-processor, the official VQA accuracy,
 * the `vqa*` reward modes, the pool's answer vote, and the simulator's VQA world. Every value here is
 * the one the chain used before tasks existed — the entries point at the same constants and
 * functions — so VQA behind the seam is bit-identical (bench/fingerprint.ts).
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */

import type { VqaItem } from "../data/item.js";
import { type ComparedMetric, VQA_COMPARED_METRIC } from "../metrics/compare.js";
import { postprocessVqaAnswer } from "../metrics/postprocess.js";
import { prepareGroundTruth, type VqaScorer, type VqaVariant } from "../metrics/vqa.js";
import { DEFAULT_SYSTEM_PROMPT, DEFAULT_ZERO_SHOT_SYSTEM_PROMPT, VQA_PROMPT_TEXT } from "../vlm/layouts.js";
import { VQA_MAX_TOKENS } from "../vlm/openai-settings.js";
import type { AnswerScoring, Task } from "./types.js";

/** The task's wording from the comparison engine's default (the same words, one place). */
function vqaWording({ name, ...rest }: ComparedMetric): Task["wording"] {
  return { metric: name, ...rest };
}

const postprocess = (text: string) => postprocessVqaAnswer(text, "lever-plus");

/** The post-processor and the (memoised per question) official scorer of a metric variant. */
export function vqaAnswering(variant: VqaVariant): AnswerScoring {
  const scorers = new Map<string, VqaScorer>();
  return {
    postprocess,
    gtAnswerSet: (setting) => setting,
    score: (answer, query) => {
      let scorer = scorers.get(query.questionId);
      if (!scorer) {
        scorer = prepareGroundTruth(
          query.answers.map((a) => a.answer),
          variant,
        );
        scorers.set(query.questionId, scorer);
      }
      return scorer(answer);
    },
  };
}

export const VQA_TASK: Task<VqaItem> = {
  name: "vqa",
  description: "visual question answering (VQAv2, OKVQA): a short answer, official VQA accuracy",
  codec: { fromStored: (row) => row, toStored: (item) => item },
  importers: ["vqa"],
  prompt: {
    systemPrompt: DEFAULT_SYSTEM_PROMPT,
    zeroShotSystemPrompt: DEFAULT_ZERO_SHOT_SYSTEM_PROMPT,
    text: VQA_PROMPT_TEXT,
  },
  generation: { maxTokens: VQA_MAX_TOKENS, stop: null },
  postprocess,
  metric: {
    perItem: "VQA accuracy against the ten annotators (min(#matching/3, 1), averaged over leave-one-out subsets)",
    corpus: "mean of the per-question accuracies",
  },
  answering: ({ variant }) => vqaAnswering(variant),
  rewardMetric: (variant) => variant,
  metricRecord: (variant) => ({ name: "vqa-accuracy", variant, postprocess: "lever-plus" }),
  pairedTest: "mcnemar",
  binaryOutcome: true,
  queryEmbedding: (kind) => kind,
  textTower: "the question",
  // Every mode of src/icl/rewards.ts reads vqa* trajectory fields (test/task/vqa.test.ts checks the list is the table's).
  rewardModes: [
    "hard_plus_soft",
    "hard_plus_soft_v2",
    "separated",
    "hard_only",
    "soft_only",
    "hard01_plus_gtprob",
    "hard01_plus_gtprob_separated",
    "hard_plus_gtprob_plus_rel",
    "legacy",
    "hybrid",
  ],
  candidateFeatures: ["vote", "agreement"],
  baselines: ["zero", "random", "topk", "vote"],
  references: ["informed", "oracle"],
  guardBaselines: ["vote"],
  simulator: "the VQA world (src/sim/world.ts)",
  demo: "demo.yaml",
  // The comparison engine's default wording is VQA's (a comparison without a task).
  wording: vqaWording(VQA_COMPARED_METRIC),
  stages: ["embed", "pools", "beams", "sft", "rollouts", "rl", "eval", "report"],
};
