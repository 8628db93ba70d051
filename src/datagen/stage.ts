/**
 * The resumable per-item stage shared by `lever beams` (items = anchors) and `lever rollouts` (items
 * = queries), on a run opened through the one stage lifecycle (src/store/stage-run.ts): identified by
 * its kind and config hash, so re-running the same command finds the same run, held by one process at
 * a time (a dead holder is taken over). Items are processed with a bounded number in flight and each is stored in the workspace
 * (`stage_items`) the moment it finishes; a re-run skips done items and retries failed ones (and
 * done items the caller asks to redo). `beforeWork` (the VLM's preflight) runs once, only when there
 * is work. The final artefact is assembled by the caller from the stored items in key order, so a
 * run that was killed and restarted produces the same bytes as one that never stopped.
 */
import { z } from "zod";
import type { StageRun } from "../store/stage-run.js";
import type { Workspace } from "../store/workspace.js";
import { OPERATIONAL } from "../util/operational.js";
import { createProgress, type ProgressStream, silentProgress } from "../util/progress.js";
import type { Vlm } from "../vlm/types.js";

/** The settings both stages end with: how many items run at once and the artefact they write. */
export function stageOutputFields(folder: "beams" | "rollouts", items: string) {
  return {
    concurrency: z
      .number()
      .int()
      .positive()
      .default(8)
      .describe(`${items} in flight at once (results do not depend on it)`)
      .meta(OPERATIONAL),
    out: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-' only")
      .describe(`artefact name: writes artifacts/${folder}/NAME.json`),
    replace: z
      .boolean()
      .default(false)
      .describe(`overwrite an existing ${folder === "beams" ? "beam" : "rollout"} artefact that has other content`),
  };
}

/** How a caller (CLI, experiment runner, test) steers a running stage. */
export interface StageHooks {
  signal?: AbortSignal;
  /** Progress output (default stderr); null = silent. */
  progress?: ProgressStream | null;
  /** Wraps the backend before the cache (latency injection, fault injection). */
  wrapBackend?: (backend: Vlm) => Vlm;
  /** Informational lines (a lease taken over from a dead process). */
  note?: (text: string) => void;
}

export type ItemOutcome<T> = { ok: true; value: T } | { ok: false; error: string };

export interface ItemStageOptions<T> {
  ws: Workspace;
  /** The held run at its begun stage (src/store/stage-run.ts). */
  run: StageRun;
  /** Every item of the stage, in the order they should be started. */
  keys: readonly string[];
  /** Items in flight at once. */
  concurrency: number;
  signal?: AbortSignal;
  /** Progress output (default stderr); null = silent. */
  progress?: ProgressStream | null;
  /** What the progress line shows beside the count (e.g. the VLM calls so far). */
  activity?: () => string;
  /** A stored done item for which this is true is processed again (e.g. it holds failed requests). */
  redo?: (value: T) => boolean;
  /** Runs once before the first item, only when there is work (the VLM's preflight check). */
  beforeWork?: () => Promise<void>;
  work(key: string): Promise<ItemOutcome<T>>;
}

export interface ItemStageResult<T> {
  /** Every done item (stored earlier or now), by key. */
  done: Map<string, T>;
  /** Items that failed in this run, with their reasons. */
  failed: Map<string, string>;
  /** Items already done before this run. */
  skipped: number;
  /** Items processed by this run (done or failed). */
  processed: number;
  /** True when the signal stopped the run before every item was processed. */
  aborted: boolean;
}

/**
 * Runs (or resumes) the items of a stage. Throws only when `beforeWork` throws or `work` throws
 * outside an abort; the stage and its run are then recorded as failed with the message.
 */
export async function runItems<T>(options: ItemStageOptions<T>): Promise<ItemStageResult<T>> {
  try {
    return await runStageItems(options);
  } catch (error) {
    options.run.fail(error instanceof Error ? error.message : String(error));
    throw error;
  }
}

async function runStageItems<T>(options: ItemStageOptions<T>): Promise<ItemStageResult<T>> {
  const { ws, run, signal } = options;
  const { runId, stage } = run;
  const wanted = new Set(options.keys);
  const done = new Map<string, T>();
  for (const row of ws.getStageItems(runId, stage))
    if (row.status === "done" && wanted.has(row.key) && !options.redo?.(row.value as T))
      done.set(row.key, row.value as T);
  const todo = options.keys.filter((key) => !done.has(key));
  const result: ItemStageResult<T> = {
    done,
    failed: new Map(),
    skipped: done.size,
    processed: 0,
    aborted: false,
  };
  if (todo.length > 0) await options.beforeWork?.();
  const progress =
    options.progress === null
      ? silentProgress
      : createProgress({ label: `${stage} ${runId}`, stream: options.progress, activity: options.activity });
  progress.start(options.keys.length, done.size);
  let next = 0;
  let broken = false;
  const worker = async () => {
    while (next < todo.length && !signal?.aborted && !broken) {
      const key = todo[next++];
      let outcome: ItemOutcome<T>;
      try {
        outcome = await options.work(key);
      } catch (error) {
        if (signal?.aborted) break;
        broken = true;
        throw error;
      }
      // An item cut short by the signal may carry "aborted" failures that say nothing about it: drop it.
      if (signal?.aborted && !outcome.ok) break;
      if (outcome.ok) {
        ws.putStageItems([{ runId, stage, key, status: "done", value: outcome.value }]);
        done.set(key, outcome.value);
      } else {
        ws.putStageItems([{ runId, stage, key, status: "failed", error: outcome.error }]);
        result.failed.set(key, outcome.error);
      }
      result.processed++;
      run.beat();
      run.progress(done.size, options.keys.length);
      progress.advance(1);
      // An in-process VLM resolves through microtasks only: let signals and timers run between items.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  } finally {
    progress.finish();
    run.release();
  }
  result.aborted = result.skipped + result.processed < options.keys.length;
  return result;
}
