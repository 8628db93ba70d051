/**
 * The ICL evaluation runner: for every retriever × shot × query, choose demonstrations, build the
 * prompt, ask the VLM (in concurrent batches), post-process, score with the official VQA accuracy
 * and store the per-question prediction. Each prediction is stored as its answer arrives (arrivals
 * of one event-loop turn share a transaction), so an interrupted run resumes where it stopped:
 * stored successes are skipped, stored failures are retried.
 */
import type { VqaItem } from "../data/item.js";
import { type Answer, type AnswerDeps, answerPrompts, buildPrompt } from "../icl/answer.js";
import { type LinkedSignal, linkedSignal } from "../util/abort.js";
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
  const concurrency = Math.max(1, deps.concurrency ?? 4);
  const progress = deps.progress ?? silentProgress;
  const { units, planned, skipped } = workUnits(plan, deps.store, deps.batchSize ?? 64);
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
  // One listener on the caller's signal; each batch in flight listens on this one.
  const scope = linkedSignal(deps.signal, concurrency + 1);
  const sink = new PredictionSink(plan.runId, deps.store, progress, scope.signal, stats);
  const indexById = new Map(plan.index.map((item) => [item.questionId, item]));
  const unitDeps: RunnerDeps = { ...deps, signal: scope.signal };
  progress.start(planned, skipped);
  try {
    await inParallel(units, concurrency, scope, sink, async (unit) => {
      await evaluateUnit(unit, plan, indexById, unitDeps, (row, failure) => sink.accept(row, failure));
      stats.prompts += unit.queries.length;
    });
  } finally {
    scope.dispose();
    try {
      sink.flush();
    } finally {
      progress.finish();
    }
  }
  stats.failuresByReason = failureSummary(sink.reasons).byReason;
  stats.failuresByCell = sink.failuresByCell();
  stats.aborted = stats.skipped + stats.evaluated < planned;
  stats.seconds = (performance.now() - started) / 1000;
  if (sink.halted !== null)
    throw new LeverError(
      `stopped: ${sink.halted.message}. ${stats.skipped + stats.evaluated} of ${planned} predictions are stored; ` +
        "rerun the same command to resume",
    );
  return stats;
}

/**
 * The plan's (retriever, shot) cells cut into batches of at most `batchSize` queries, leaving out
 * predictions stored as successes; `planned` counts every triple, `skipped` the stored successes.
 */
function workUnits(
  plan: EvalPlan,
  store: PredictionStore,
  batchSize: number,
): { units: WorkUnit[]; planned: number; skipped: number } {
  const stored = new Map(
    store.list(plan.runId).map((row) => [predictionKey(row.retriever, row.shot, row.questionId), row]),
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
  return { units, planned, skipped };
}

/**
 * Where predictions go as they arrive: stored (arrivals of one event-loop turn in one write) and
 * counted in the stats, except failures that say nothing about the prompt — a circuit-open failure
 * (kept as `halted`: sending stopped) and failures after the abort (the rerun retries them).
 */
class PredictionSink {
  readonly reasons = new Map<VlmFailureReason, number>();
  /** The circuit-open failure that stopped sending, if any. */
  halted: VlmFailure | null = null;
  private readonly cells = new Map<string, number>();
  private readonly writer: Coalescer<EvalPrediction>;

  constructor(
    runId: string,
    store: PredictionStore,
    progress: Progress,
    private readonly signal: AbortSignal,
    private readonly stats: RunStats,
  ) {
    this.writer = new Coalescer<EvalPrediction>((rows) => {
      store.put(runId, rows);
      progress.advance(rows.length);
    });
  }

  accept(row: EvalPrediction, failure: VlmFailure | null): void {
    if (failure !== null) {
      if (failure.reason === "circuit-open") {
        this.halted ??= failure;
        return;
      }
      if (this.signal.aborted) return; // possibly caused by the abort; the rerun retries it
      countFailure(this.reasons, failure);
      const cell = `${row.retriever}@${row.shot}`;
      this.cells.set(cell, (this.cells.get(cell) ?? 0) + 1);
      this.stats.failures++;
    }
    this.stats.evaluated++;
    this.writer.add(row);
  }

  /** Writes what is pending now. */
  flush(): void {
    this.writer.flush();
  }

  /** Failures by cell ("retriever@shot"), in cell order. */
  failuresByCell(): Record<string, number> {
    return Object.fromEntries([...this.cells].sort(([a], [b]) => (a < b ? -1 : 1)));
  }
}

/**
 * Evaluates the units, `concurrency` at a time, until all are done, the scope is aborted or the
 * sink halted. A throw (an invariant violation) stops the other workers, aborts the batches in
 * flight and is rethrown.
 */
async function inParallel(
  units: readonly WorkUnit[],
  concurrency: number,
  scope: LinkedSignal,
  sink: PredictionSink,
  evaluate: (unit: WorkUnit) => Promise<void>,
): Promise<void> {
  let next = 0;
  let broken = false;
  const worker = async () => {
    while (next < units.length && !scope.signal.aborted && !broken && sink.halted === null) {
      const unit = units[next++];
      try {
        await evaluate(unit);
      } catch (error) {
        broken = true;
        scope.abort(error);
        throw error;
      }
      // A fast in-process VLM (the simulator) resolves through microtasks only; yield to the event
      // loop so signals (Ctrl-C → abort), timers and pending writes are handled between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
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
