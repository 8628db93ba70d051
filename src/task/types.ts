/**
 * The task contract (docs/architecture.md, "How to add a task"). A task is what the chain is asked to
 * do with an item — answer a question about an image (vqa), caption an image (caption) — and every
 * piece of the chain that depends on it is reached through one `Task` object, looked up by name in
 * THE registry (src/task/registry.ts):
 *
 *   - its item type, how items are stored in the workspace's `items` table (`codec`) and the
 *     `lever data import` formats that create them (`importers`);
 *   - prompt pieces: the instruction (system prompts) and how a demonstration and the query are
 *     rendered as text in each layout (`prompt`), and the generation settings (`generation`);
 *   - the post-processor of a generated text (`postprocess`), shared by rewards and evaluation;
 *   - the per-item metric and how per-item values make the corpus metric (`metric`);
 *   - reward modes, candidate features, no-training baselines and the simulator world it runs on;
 *   - report wording (`wording`: "accuracy" vs "CIDEr");
 *   - the chain stages it implements (`stages`): a stage asked to run a task that does not list it
 *     refuses with one line instead of computing VQA numbers on other data.
 *
 * A dataset records its task (src/task/dataset-task.ts; a dataset without one is VQA, so workspaces
 * made before tasks existed keep their identities), and every stage reads the task from its
 * datasets and refuses a mix (src/task/guard.ts).
 */

import type { VqaItem } from "../data/item.js";
import type { CompareTest } from "../metrics/compare.js";
import type { VqaVariant } from "../metrics/vqa.js";
import type { CandidateFeature } from "../selector/config.js";
import type { PromptText } from "../vlm/layouts.js";

/** The stages of the chain that read a task's items (`lever data import` and `inspect` work for every task). */
export const TASK_STAGES = ["embed", "pools", "beams", "sft", "rollouts", "rl", "eval", "report"] as const;
export type TaskStage = (typeof TASK_STAGES)[number];

/**
 * An item as the `items` table stores it (its columns; VQA's own item type). A task whose item has
 * other fields maps them onto these columns in its `codec` (caption: the references in `answers`).
 */
export type StoredItem = VqaItem;

export interface TaskPrompt {
  /** System prompt when the prompt has demonstrations (null: no system message). */
  systemPrompt: string | null;
  /** System prompt of a zero-shot prompt (null: no system message). */
  zeroShotSystemPrompt: string | null;
  /** How a demonstration and the query read after their images, in each layout (src/vlm/layouts.ts). */
  text: PromptText;
}

export interface TaskGeneration {
  /** Generated tokens per answer (the openai backend's `maxTokens` default). */
  maxTokens: number;
  /** Stop strings sent with a generation request (null: none). */
  stop: readonly string[] | null;
}

export interface TaskMetric {
  /** Name of the per-item value (stored predictions' `accuracy` column for vqa). */
  perItem: string;
  /** How the corpus value is made from the items (mean of per-item values, or a corpus metric). */
  corpus: string;
}

/**
 * How a task scores a generated text (src/icl/answer.ts): the one post-processor and the per-item
 * score of a processed answer against the query's references, shared by rewards and evaluation.
 */
export interface AnswerScoring {
  postprocess(text: string): string;
  score(answer: string, query: StoredItem): number;
  /**
   * The answers scored for their probability under a `gtAnswers` setting (src/icl/trajectory-scorer.ts): VQA
   * keeps it (`all`: every distinct annotator answer, for vqaGtProb); a caption task scores its shown
   * reference under both `majority` and `all` (a sum of probabilities of whole captions means nothing).
   */
  gtAnswerSet(setting: "none" | "majority" | "all"): "none" | "majority" | "all";
}

/** What a scorer is built from. */
export interface ScoringScope {
  /**
   * Items whose references fix the metric's corpus statistics: caption CIDEr-D's document
   * frequencies. Evaluation passes the evaluated items (pycocoevalcap's corpus mode, so the mean of
   * the per-item scores is the reported number); rewards pass the index (the `fixed` mode). VQA reads none.
   */
  references: readonly StoredItem[];
  /** VQA accuracy variant (`--metric-variant`); other tasks ignore it. */
  variant: VqaVariant;
}

export interface TaskWording {
  /** The headline metric as reports print it. */
  metric: string;
  /** What one evaluated thing is called ("question", "image"). */
  unit: string;
  /** One line for legends: what the value is and its scale (as a comparison prints it, ×100). */
  legend: string;
  /** A chart's value axis. */
  axis: string;
  /** Per-item values are shares of right (shown as %), not a continuous score (shown ×100). */
  share: boolean;
}

export interface Task<Item = unknown> {
  /** Its key in the registry (src/task/registry.ts) and what a dataset records. */
  name: string;
  /** One line for help and `lever data list`. */
  description: string;
  codec: {
    /** A stored row as the task's item. */
    fromStored(row: StoredItem): Item;
    /** The task's item as a stored row (the items hash is computed on these). */
    toStored(item: Item): StoredItem;
  };
  /** `lever data import --format` values that create datasets of this task. */
  importers: readonly string[];
  prompt: TaskPrompt;
  generation: TaskGeneration;
  /** The one post-processor of a generated text, shared by rewards and evaluation. */
  postprocess(text: string): string;
  metric: TaskMetric;
  /** The scorer of one scope (evaluation or rewards). */
  answering(scope: ScoringScope): AnswerScoring;
  /** What rollouts record as their reward metric (part of their identity). */
  rewardMetric(variant: VqaVariant): unknown;
  /** What an evaluation run records as its metric (part of its identity). */
  metricRecord(variant: VqaVariant): Record<string, unknown>;
  /**
   * The paired test of a comparison when none is asked for: exact McNemar on "fully right" (acc = 1)
   * suits VQA's five-valued accuracy; a continuous score (CIDEr-D) takes the sign-flip test.
   */
  pairedTest: CompareTest;
  /** Whether McNemar on acc = 1 means anything for this task's per-item score. */
  binaryOutcome: boolean;
  /**
   * The QUERY embedding compared with the index's embedding of a kind (src/task/query-embedding.ts).
   * VQA: the same kind. A caption item's text embedding encodes its reference caption — the answer —
   * so a caption query is its image under every kind: "text" similarity is image → caption (CLIP's
   * cross-modal retrieval), "joint" image → image + caption.
   */
  queryEmbedding(kind: "image" | "text" | "joint"): "image" | "text" | "joint";
  /** What the text tower embeds of an item (`lever embed compute`); null: nothing (image embeddings only). */
  textTower: string | null;
  /** Reward modes (`reward.mode`, src/icl/rewards.ts) that mean something for this task. */
  rewardModes: readonly string[];
  /** Candidate features (`model.features`, src/icl/candidate-data.ts) that mean something for this task's items. */
  candidateFeatures: readonly CandidateFeature[];
  /** Retriever kinds (src/icl/retriever-catalog.ts) that need no training. */
  baselines: readonly string[];
  /** Reference retriever kinds it has (the simulator's informed ceiling and oracle). */
  references: readonly string[];
  /** `guard.baselines` when the experiment leaves it unset: what a deployment may run in the selector's place. */
  guardBaselines: readonly string[];
  /** The simulator world that synthesises this task's data (null: none yet). */
  simulator: string | null;
  /** The experiment file in examples/ that `lever demo --task NAME` runs (the chain on the simulator). */
  demo: string;
  wording: TaskWording;
  /** Chain stages implemented for this task. */
  stages: readonly TaskStage[];
}
