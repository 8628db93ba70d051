/**
 * `lever eval` end to end: prepare (data, VLM, pools, retrievers, run), run or resume the
 * predictions with progress recorded on the run's stage, then summarise the requested cells
 * (plus the random baseline when the run has it) with the comparison engine (./summary.ts) and
 * store the summary as an artefact.
 */

import type { ComparisonResult } from "../metrics/compare.js";
import type { StageRun } from "../store/stage-run.js";
import type { Workspace } from "../store/workspace.js";
import { InterruptedError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { createProgress, type Progress, type ProgressStream, silentProgress } from "../util/progress.js";
import { activityText, hasActivity, hasStats, type VlmRunStats } from "../vlm/stats.js";
import { preflight, type Vlm } from "../vlm/types.js";
import type { EvalOptions, EvalRunConfig } from "./config.js";
import { type RunStats, runEvaluation } from "./runner.js";
import { prepareEvaluation, type VoteScale } from "./setup.js";
import { summarizeEvaluation } from "./summary.js";
import { writeEvaluationEvents } from "./tensorboard.js";

export interface EvaluateResult {
  runId: string;
  resumed: boolean;
  config: EvalRunConfig;
  stats: RunStats;
  vlm: VlmRunStats | null;
  /** Retrievers of the summary: the requested ones, and random when the run holds it at the requested shots. */
  retrievers: string[];
  /** The comparison engine's table of their cells (null when no prediction is stored yet). */
  summary: ComparisonResult | null;
  warnings: string[];
  notes: string[];
  /** Artefact holding the summary (absent when the run was interrupted). */
  artifact: { path: string; sha256: string } | null;
}

export interface EvaluateOptions {
  signal?: AbortSignal;
  /** Progress output (default stderr); null = silent. */
  progress?: ProgressStream | null;
  /** Resample whole images in the bootstrap (questions on one image are not independent). */
  clusterByImage?: boolean;
  /** Wraps the backend before the cache (instrumentation, fault injection in tests). */
  wrapBackend?: (backend: Vlm) => Vlm;
  /**
   * Questions never asked, whatever the query subset (`lever run`'s guard leaves out every training
   * stage's queries); their sorted ids' hash joins the run's identity.
   */
  exclude?: ReadonlySet<string>;
}

/**
 * The error a run stopped by Ctrl-C (`result.stats.aborted`) ends with: what it kept; `hint` (how to
 * resume, in the caller's words) is appended when given.
 */
export function evalInterrupted(result: Pick<EvaluateResult, "stats" | "runId">, hint?: string): InterruptedError {
  const { skipped, evaluated, planned } = result.stats;
  return new InterruptedError(
    `evaluation run ${result.runId} stopped after ${skipped + evaluated} of ${planned} predictions (those are stored)` +
      (hint === undefined ? "" : `; ${hint}`),
  );
}

export async function evaluate(
  ws: Workspace,
  options: EvalOptions,
  run: EvaluateOptions = {},
): Promise<EvaluateResult> {
  const prepared = await prepareEvaluation(ws, options, { wrapBackend: run.wrapBackend, exclude: run.exclude });
  // Held since it was opened: a run another live process evaluates was refused there.
  const { runId } = prepared;
  const stageRun = prepared.run;
  stageRun.begin();
  const client = prepared.vlm.vlm;
  const activity = hasActivity(client) ? () => activityText(client) : undefined;
  const display =
    run.progress === null ? silentProgress : createProgress({ label: `eval ${runId}`, stream: run.progress, activity });
  let stats: RunStats;
  try {
    stats = await runEvaluation(
      {
        runId,
        queries: prepared.queries,
        index: prepared.index,
        retrievers: prepared.retrievers,
        shots: options.shots,
        order: prepared.config.order as "nearest" | "farthest",
      },
      {
        vlm: client,
        store: prepared.store,
        ...prepared.answering,
        progress: stageProgress(stageRun, display),
        signal: run.signal,
        batchSize: options.batchSize,
        concurrency: options.concurrency,
        // A server that cannot do the work fails here, in one line, before anything is sent.
        beforeWork: () => preflight(client, { scoring: false, signal: run.signal }),
      },
    );
  } catch (error) {
    stageRun.fail(error instanceof Error ? error.message : String(error));
    throw error;
  }

  // The report covers what was asked for, plus the random baseline when this run holds it.
  const cells = new Set(prepared.retrievers.flatMap((r) => r.shots(options.shots).map((s) => `${r.name}@${s}`)));
  const wanted = ws
    .getPredictions(runId)
    .filter(
      (row) =>
        cells.has(`${row.retriever}@${row.shot}`) || (row.retriever === "random" && options.shots.includes(row.shot)),
    );
  const clusters = run.clusterByImage ? new Map(prepared.queries.map((q) => [q.questionId, q.imageId])) : undefined;
  const summary = summarizeEvaluation(runId, wanted, { seed: options.seed, resamples: options.resamples, clusters });

  const vlm = hasStats(prepared.vlm.vlm) ? prepared.vlm.vlm.getStats() : null;
  let artifact: EvaluateResult["artifact"] = null;
  if (!stats.aborted) {
    const body = {
      format: "lever.eval-summary/2",
      runId,
      config: prepared.config,
      stats,
      vlm,
      summary,
      vote: prepared.vote,
    };
    if (prepared.vote !== null) logVoteScale(ws, runId, prepared.vote);
    // Named by its cells in their stored form (selector paths workspace-relative): a moved workspace rewrites the same file.
    const named = ws.stored([...cells]).sort();
    const name = hashValue({ cells: named, resamples: options.resamples, clusters: !!clusters }).slice(0, 12);
    artifact = ws.writeArtifact(`eval/${runId}/summary-${name}.json`, `${JSON.stringify(body, null, 2)}\n`);
    writeEvaluationEvents(ws.dir, runId, summary);
    stageRun.complete([artifact]);
  } else stageRun.release(); // interrupted (Ctrl-C): the run stays unfinished and reads as interrupted
  return {
    runId,
    resumed: prepared.resumed,
    config: prepared.config,
    stats,
    vlm,
    retrievers: [...new Set(wanted.map((row) => row.retriever))],
    summary,
    warnings: prepared.warnings,
    notes: prepared.notes,
    artifact,
  };
}

/**
 * Mirrors progress into the run's stage record so `lever` can show how far an evaluation got; at most
 * once a second (predictions now arrive one by one), and at the end.
 */
function stageProgress(run: StageRun, display: Progress): Progress {
  let done = 0;
  let total = 0;
  let written = Number.NEGATIVE_INFINITY;
  const write = () => {
    written = performance.now();
    run.progress(done, total);
  };
  return {
    start(t, already) {
      total = t;
      done = already;
      write();
      display.start(t, already);
    },
    advance(count) {
      done += count;
      if (performance.now() - written >= 1000) write();
      display.advance(count);
    },
    finish() {
      write();
      display.finish();
    },
  };
}

/**
 * The vote's scale as the run's summary values (stage "vote", no step: the report's stage summaries
 * list them): `voteScale`, and with a calibration its query count and each scale's first-pick accuracy.
 */
function logVoteScale(ws: Workspace, runId: string, vote: VoteScale): void {
  const rows = [{ runId, stage: "vote", name: "voteScale", value: vote.scale }];
  if (vote.calibration !== null) {
    rows.push({ runId, stage: "vote", name: "calibrationQueries", value: vote.calibration.queries });
    for (const a of vote.calibration.accuracy)
      rows.push({ runId, stage: "vote", name: `calibrationAccuracy@${a.scale}`, value: 100 * a.accuracy });
  }
  ws.logMetrics(rows);
}
