/**
 * What `lever beams` and `lever rollouts` share around their per-item work (src/datagen/stage.ts):
 * the configured VLM with a call counter between the response cache and the backend (the caller's
 * `wrapBackend` innermost), the stage's run opened under its config and begun, its items run with the
 * VLM's preflight and the counter on the progress line, and its metrics logged followed by the VLM's
 * calls, cache hits and failures.
 */
import type { VqaItem } from "../data/item.js";
import { createVlm, type VlmSetup } from "../icl/backend.js";
import { openStageRun, type StageRun } from "../store/stage-run.js";
import type { DatasetRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import type { VlmSettings } from "../vlm/settings.js";
import { preflight } from "../vlm/types.js";
import { type ItemOutcome, type ItemStageResult, runItems, type StageHooks } from "./stage.js";
import { type CallCounter, callCounter, type VlmCalls } from "./vlm-calls.js";

/** A VLM item stage of one command: its workspace, hooks and counted VLM. */
export interface VlmStage {
  readonly ws: Workspace;
  readonly hooks: StageHooks;
  /** The VLM the items ask (`vlm.vlm`) and its backend (`vlm.backend.id` names it in the config). */
  readonly vlm: VlmSetup;
  readonly counter: CallCounter;
}

/** The items of a VLM stage (keyed by question id) and how each is worked on (see ItemStageOptions). */
export interface VlmItems<T> {
  items: readonly VqaItem[];
  concurrency: number;
  /** Whether the work scores answers (the preflight then checks the server returns log-probabilities). */
  scoring: boolean;
  redo?: (value: T) => boolean;
  work(item: VqaItem): Promise<ItemOutcome<T>>;
}

/** The stage's VLM, seeded with the stage's seed, counting what reaches the backend. */
export function openVlmStage(
  ws: Workspace,
  vlmSettings: VlmSettings,
  dataset: DatasetRecord,
  seed: number,
  hooks: StageHooks,
): VlmStage {
  const counter = callCounter();
  const vlm = createVlm(ws, vlmSettings, dataset, {
    seed,
    wrapBackend: (backend) => counter.wrap(hooks.wrapBackend ? hooks.wrapBackend(backend) : backend),
  });
  return { ws, hooks, vlm, counter };
}

/** The run of this stage kind and config (resumed when it exists: src/store/stage-run.ts), not yet begun. */
export function openItemRun(stage: VlmStage, kind: string, config: Record<string, unknown>, seed: number): StageRun {
  return openStageRun(stage.ws, { kind, config, seed, work: "items", note: stage.hooks.note });
}

/** Begins the run and runs (or resumes) its items; the VLM's preflight runs once, only when there is work. */
export function runVlmItems<T>(stage: VlmStage, run: StageRun, items: VlmItems<T>): Promise<ItemStageResult<T>> {
  const { signal, progress } = stage.hooks;
  const byId = new Map(items.items.map((item) => [item.questionId, item]));
  run.begin();
  return runItems<T>({
    ws: stage.ws,
    run,
    keys: items.items.map((item) => item.questionId),
    concurrency: items.concurrency,
    signal,
    progress,
    activity: () => stage.counter.activity(),
    redo: items.redo,
    beforeWork: () => preflight(stage.vlm.vlm, { scoring: items.scoring, signal }),
    work: (key) => items.work(byId.get(key)!),
  });
}

/** What the stage asked of the VLM so far (cache hits from the cache wrapper). */
export function vlmCalls(stage: VlmStage): VlmCalls {
  return stage.counter.summary(stage.vlm.vlm);
}

/** Logs the stage's metrics in the given order, then the VLM's calls, cache hits and failures. */
export function logStageMetrics(
  stage: VlmStage,
  run: StageRun,
  metrics: readonly (readonly [string, number])[],
  calls: VlmCalls,
): void {
  const all: (readonly [string, number])[] = [
    ...metrics,
    ["vlm.calls", calls.calls],
    ["vlm.cache_hits", calls.cacheHits],
    ["vlm.failures", calls.failures],
  ];
  stage.ws.logMetrics(all.map(([name, value]) => ({ runId: run.runId, stage: run.stage, name, value })));
}

/** Seconds since a `performance.now()` reading. */
export function secondsSince(started: number): number {
  return (performance.now() - started) / 1000;
}
