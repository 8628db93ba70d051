/**
 * The caption task (src/task/types.ts, issue 24): one COCO image with all its reference captions,
 * imported from the official caption files or Karpathy's split file (`lever data import-captions`),
 * scored with CIDEr-D as coco-caption computes it (src/metrics/caption/, docs/captioning.md).
 *
 * What is here today: items, importers, metrics, the demonstration-reference setting
 * (caption-reference.ts) and the report wording. Prompting, generation, rewards, baselines and the
 * simulator are issue 24's points 3, 5 and 6; until then `stages` lists only `embed` (image
 * embeddings of the items), and every other stage refuses a caption dataset with one line
 * (src/task/guard.ts) instead of computing VQA numbers on captions. The prompt pieces below are the
 * caption analogue of the VQA layout, for the stages to come; nothing renders them yet.
 * What we read of Lever-Plus and Lever-LM, and where: docs/provenance.md.
 */
import { CAPTION_TASK_NAME, type CaptionItem, captionFromStored, captionToStored } from "../data/caption-item.js";
import { CAPTION_FORMATS } from "../store/ingest/captions.js";
import { captionAnswering, postprocessCaption } from "./caption-scoring.js";
import type { Task } from "./types.js";

export const CAPTION_TASK: Task<CaptionItem> = {
  name: CAPTION_TASK_NAME,
  description: "image captioning (COCO captions, Karpathy splits): one sentence, CIDEr-D as coco-caption",
  codec: { fromStored: captionFromStored, toStored: captionToStored },
  importers: CAPTION_FORMATS,
  prompt: {
    systemPrompt:
      "You will see example images with short captions. Caption the last image the same way, with one short sentence.",
    zeroShotSystemPrompt: "Describe the image in one short sentence.",
    text: {
      demonstrationText: (item) => `Caption: ${item.answer}`,
      queryText: () => "Caption:",
      turnText: () => "Caption:",
    },
  },
  // Lever-LM / OpenFlamingo evaluate with 20 new tokens.
  generation: { maxTokens: 20, stop: null },
  postprocess: postprocessCaption,
  metric: {
    perItem: "CIDEr-D against the image's references (fixed document frequencies from the index's references)",
    corpus: "CIDEr-D with document frequencies over the evaluated images' references (pycocoevalcap), ×100",
  },
  answering: captionAnswering,
  rewardMetric: () => ({ name: "cider-d", df: "index references", postprocess: "first line, no label" }),
  metricRecord: () => ({ name: "cider-d", df: "evaluated images' references", postprocess: "first line, no label" }),
  pairedTest: "sign-flip",
  binaryOutcome: false,
  queryEmbedding: () => "image",
  textTower: "the shown reference caption",
  rewardModes: ["cider", "ref_logprob", "cider_plus_logprob"],
  candidateFeatures: ["consensus"],
  baselines: ["zero", "random", "topk", "consensus"],
  references: ["informed", "oracle"],
  guardBaselines: ["consensus"],
  simulator: "the caption world (src/sim/caption/)",
  demo: "caption-demo.yaml",
  wording: {
    metric: "CIDEr",
    unit: "image",
    legend:
      "CIDEr-D ×100 against each image's references (pycocoevalcap; document frequencies over the evaluated images)",
    axis: "CIDEr ×100",
    share: false,
  },
  stages: ["embed", "pools", "beams", "sft", "rollouts", "rl", "eval", "report"],
};
