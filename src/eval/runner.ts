/**
 * The ICL evaluation runner: for every retriever × shot × query, choose demonstrations, build the
 * prompt, ask the VLM (in concurrent batches), post-process, score with the official VQA accuracy
 * and store the per-question prediction. Each prediction is stored as its answer arrives (arrivals
 * of one event-loop turn share a transaction), so an interrupted run resumes where it stopped:
 * stored successes are skipped, stored failures are retried.
 */
import type { VqaItem } from "../data/item.js";
import { type Answer, type AnswerDeps, answerPrompts, buildPrompt } from "../icl/answer.js";
import { linkedSignal } from "../util/abort.js";
import { Coalescer } from "../util/coalesce.js";
import { LeverError } from "../util/errors.js";
import { type Progress, silentProgress } from "../util/progress.js";
import { countFailure, type FailureCounts, failureSummary } from "../vlm/stats.js";
import { formatFailure, type VlmFailure, type VlmFailureReason } from "../vlm/types.js";
import { checkDemonstrations, type Retriever } from "./retrievers.js";
import { type EvalPrediction, type PredictionStore, type PromptOrder, predictionKey } from "./types.js";

export interface EvalPlan {
  runId: string;
  queries: readonly VqaItem[];
  index: readonly VqaItem[];
  retrievers: readonly Retriever[];
  /** Requested shot counts; each retriever picks the ones it supports (zero-shot runs once at 0). */
  shots: readonly number[];
  order: PromptOrder;
}

export interface RunnerDeps extends AnswerDeps {
  store: PredictionStore;
  progress?: Progress;
  /** Prompts per VLM call (default 64). */
  batchSize?: number;
  /** Batches in flight at once (default 4): keeps a remote server busy across batch boundaries. */
  concurrency?: number;
  /** Runs once before the first prompt is sent, only when there is work (the VLM's preflight check). */
  beforeWork?: () => Promise<void>;
}

export interface RunStats {
  /** (retriever, shot, query) triples in the plan. */
  planned: number;
  /** Already stored as successes before this call (resume). */
  skipped: number;
  /** Predictions stored by this call (successes + failures). */
  evaluated: number;
  /** Failed VLM calls stored by this call (excluded from accuracy, retried on the next run). */
  failures: number;
  /** Those failures by typed reason, and by cell ("retriever@shot"). */
  failuresByReason: FailureCounts;
  failuresByCell: Record<string, number>;
  /** Prompts handed to the VLM (before any cache). */
  prompts: number;
  /** True when the signal stopped the run before the plan was finished. */
  aborted: boolean;
  seconds: number;
}

interface WorkUnit {
  retriever: Retriever;
  shot: number;
  queries: VqaItem[];
}

/**
 * Runs (or resumes) the plan. Throws on invariant violations, and a LeverError when the VLM's
 * circuit breaker stopped sending (every endpoint kept failing; what was stored stays). Other VLM
 * failures are stored, not thrown.
 */
export async function runEvaluation(plan: EvalPlan, deps: RunnerDeps): Promise<RunStats> {
  const started = performance.now();
  const batchSize = deps.batchSize ?? 64;
  const concurrency = Math.max(1, deps.concurrency ?? 4);
  const progress = deps.progress ?? silentProgress;
  const indexById = new Map(plan.index.map((item) => [item.questionId, item]));
  const stored = new Map(
    deps.store.list(plan.runId).map((row) => [predictionKey(row.retriever, row.shot, row.questionId), row]),
  );

  const units: WorkUnit[] = [];
  let planned = 0;
  let skipped = 0;
  for (const retriever of plan.retrievers) {
    for (const shot of retriever.shots(plan.shots)) {
      const todo: VqaItem[] = [];
      for (const query of plan.queries) {
        planned++;
        const row = stored.get(predictionKey(retriever.name, shot, query.questionId));
        if (row && row.failure === null) skipped++;
        else todo.push(query);
      }
      for (let i = 0; i < todo.length; i += batchSize)
        units.push({ retriever, shot, queries: todo.slice(i, i + batchSize) });
    }
  }

  if (units.length > 0) await deps.beforeWork?.();

  const stats: RunStats = {
    planned,
    skipped,
    evaluated: 0,
    failures: 0,
    failuresByReason: {},
    failuresByCell: {},
    prompts: 0,
    aborted: false,
    seconds: 0,
  };
  const reasons = new Map<VlmFailureReason, number>();
  const cells = new Map<string, number>();
  // One listener on the caller's signal; each batch in flight listens on this one.
  const scope = linkedSignal(deps.signal, concurrency + 1);
  const unitDeps: RunnerDeps = { ...deps, signal: scope.signal };
  const writer = new Coalescer<EvalPrediction>((rows) => {
    deps.store.put(plan.runId, rows);
    progress.advance(rows.length);
  });
  let halted: VlmFailure | null = null;
  /** Stores one prediction as it arrives, except failures that say nothing about the prompt. */
  const accept = (row: EvalPrediction, failure: VlmFailure | null) => {
    if (failure !== null) {
      if (failure.reason === "circuit-open") {
        halted ??= failure;
        return;
      }
      if (scope.signal.aborted) return; // possibly caused by the abort; the rerun retries it
      countFailure(reasons, failure);
      const cell = `${row.retriever}@${row.shot}`;
      cells.set(cell, (cells.get(cell) ?? 0) + 1);
      stats.failures++;
    }
    stats.evaluated++;
    writer.add(row);
  };

  progress.start(planned, skipped);
  let next = 0;
  let broken = false; // an invariant violation in one worker stops the others
  const worker = async () => {
    while (next < units.length && !scope.signal.aborted && !broken && halted === null) {
      const unit = units[next++];
      try {
        await evaluateUnit(unit, plan, indexById, unitDeps, accept);
      } catch (error) {
        broken = true;
        scope.abort(error);
        throw error;
      }
      stats.prompts += unit.queries.length;
      // A fast in-process VLM (the simulator) resolves through microtasks only; yield to the event
      // loop so signals (Ctrl-C → abort), timers and pending writes are handled between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    scope.dispose();
    try {
      writer.flush();
    } finally {
      progress.finish();
    }
  }
  stats.failuresByReason = failureSummary(reasons).byReason;
  stats.failuresByCell = Object.fromEntries([...cells].sort(([a], [b]) => (a < b ? -1 : 1)));
  stats.aborted = stats.skipped + stats.evaluated < planned;
  stats.seconds = (performance.now() - started) / 1000;
  if (halted !== null)
    throw new LeverError(
      `stopped: ${(halted as VlmFailure).message}. ${stats.skipped + stats.evaluated} of ${planned} predictions are stored; ` +
        "rerun the same command to resume",
    );
  return stats;
}

async function evaluateUnit(
  unit: WorkUnit,
  plan: EvalPlan,
  indexById: ReadonlyMap<string, VqaItem>,
  deps: RunnerDeps,
  accept: (row: EvalPrediction, failure: VlmFailure | null) => void,
): Promise<void> {
  const { retriever, shot, queries } = unit;
  const selections = await retriever.select(queries, shot);
  if (selections.length !== queries.length)
    throw new Error(`${retriever.name} returned ${selections.length} selections for ${queries.length} queries`);
  const prompts = queries.map((query, i) => {
    checkDemonstrations(retriever.name, query, shot, selections[i], indexById);
    return buildPrompt(query, selections[i], indexById, plan.order);
  });
  // Each answer is stored as it arrives; an aborted batch (null) keeps those that arrived before.
  await answerPrompts(prompts, queries, deps, (i, a: Answer) =>
    accept(
      {
        retriever: retriever.name,
        shot,
        questionId: queries[i].questionId,
        demonstrations: prompts[i].demonstrations.map((d) => d.questionId),
        promptHash: a.promptHash,
        rawAnswer: a.rawAnswer,
        answer: a.answer,
        accuracy: a.accuracy,
        failure: a.failure === null ? null : formatFailure(a.failure),
      },
      a.failure,
    ),
  );
}
