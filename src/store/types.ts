/** Records kept in the workspace database (one interface per table, in camelCase). */

import type { SubsetRecord } from "../data/splits.js";
import type { SourceFile } from "../data/vqa.js";
import type { LeaseHolder } from "./leases.js";

export type { LeaseHolder, SourceFile, SubsetRecord };

export interface DatasetInput {
  /** Workspace-unique name; letters, digits, ".", "_", "-" (it appears in artefact paths). */
  name: string;
  split: string;
  /** How the items were made: "vqa" (official files), "synth", … */
  source: string;
  files: SourceFile[];
  subset?: SubsetRecord | null;
  /** Image path template the items' image paths were rendered from, when images were given. */
  images?: string | null;
  /** Free-form provenance (generator settings, import warnings, …). */
  details?: Record<string, unknown>;
}

export interface DatasetRecord {
  name: string;
  split: string;
  source: string;
  files: SourceFile[];
  subset: SubsetRecord | null;
  images: string | null;
  details: Record<string, unknown>;
  itemCount: number;
  /** sha256 over the canonical JSON of the items in question-id order: the dataset's content identity. */
  itemsHash: string;
  createdAt: string;
}

/**
 * An embedding matrix stored as an artefact file. Row r belongs to the r-th item of
 * `loadItems(dataset)` (question-id order) unless `idsPath` names a file listing the row ids.
 */
export interface EmbeddingRecord {
  dataset: string;
  kind: string;
  /** Path relative to the workspace's artifacts/ folder (or absolute, for files kept outside it). */
  path: string;
  sha256: string;
  rows: number;
  dim: number;
  dtype: string;
  idsPath?: string | null;
  details?: Record<string, unknown>;
  createdAt?: string;
}

/** A stage's recorded state. */
export type StageStatus = "running" | "done" | "failed";

/**
 * A run's state: as recorded, except that a "running" run no live process holds — its lease holder
 * died (the process was killed), or it let the run go unfinished (Ctrl-C) — reads as "interrupted".
 * `lever train resume` / re-running the command continues it.
 */
export type RunStatus = StageStatus | "interrupted";

export interface RunInput {
  kind: string;
  /** The fully resolved config; stored as canonical JSON together with its hash. */
  config: unknown;
  seed: number;
  parentRunId?: string;
  name?: string;
}

export interface RunRecord {
  id: string;
  kind: string;
  name: string | null;
  config: unknown;
  configHash: string;
  seed: number;
  status: RunStatus;
  parentRunId: string | null;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
  /** The process working on the run (dead when status is "interrupted"); null when none is. */
  holder: LeaseHolder | null;
}

/** A file a stage produced; `path` is relative to artifacts/ when the file lives there. */
export interface ArtifactRef {
  path: string;
  sha256: string;
}

export interface StageRecord {
  runId: string;
  name: string;
  status: StageStatus;
  progressDone: number;
  progressTotal: number;
  artifacts: ArtifactRef[];
  startedAt: string;
  finishedAt: string | null;
  error: string | null;
}

export interface MetricRow {
  runId: string;
  stage: string;
  step?: number | null;
  epoch?: number | null;
  name: string;
  value: number;
}

export interface MetricRecord extends MetricRow {
  step: number | null;
  epoch: number | null;
  createdAt: string;
}

/** One evaluated question: which demonstrations were shown, what the VLM said and how it scored. */
export interface PredictionRow {
  runId: string;
  retriever: string;
  shot: number;
  questionId: string;
  /** Question ids of the demonstrations, in prompt order. */
  demonstrations: string[];
  promptHash: string;
  rawAnswer: string | null;
  answer: string | null;
  /** VQA accuracy in [0, 1]; null when the VLM call failed. */
  accuracy: number | null;
  /** Why the VLM call failed after all retries; null on success. */
  failure: string | null;
}

export interface PredictionFilter {
  retriever?: string;
  shot?: number;
}

/**
 * One item of a resumable stage (a beam-search anchor, a rollout query): its result as JSON once
 * done, or why it failed (retried by the next run).
 */
export type StageItemRow =
  | { runId: string; stage: string; key: string; status: "done"; value: unknown }
  | { runId: string; stage: string; key: string; status: "failed"; error: string };
