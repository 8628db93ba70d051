/**
 * The ICL evaluation runner: for every retriever × shot × query, choose demonstrations, build the
 * prompt, ask the VLM (in concurrent batches), post-process, score with the official VQA accuracy
 * and store the per-question prediction. Work is stored batch by batch, so an interrupted run
 * resumes where it stopped: stored successes are skipped, stored failures are retried.
 */
import type { VqaItem } from "../data/item.js";
import { type AnswerDeps, answerPrompts, buildPrompt } from "./answer.js";
import { type Progress, silentProgress } from "./progress.js";
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

/** Runs (or resumes) the plan. Throws on invariant violations; VLM failures are stored, not thrown. */
export async function runEvaluation(plan: EvalPlan, deps: RunnerDeps): Promise<RunStats> {
  const started = performance.now();
  const batchSize = deps.batchSize ?? 64;
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

  const stats: RunStats = { planned, skipped, evaluated: 0, failures: 0, prompts: 0, aborted: false, seconds: 0 };
  progress.start(planned, skipped);
  let next = 0;
  let broken = false; // an invariant violation in one worker stops the others
  const worker = async () => {
    while (next < units.length && !deps.signal?.aborted && !broken) {
      const unit = units[next++];
      let rows: EvalPrediction[];
      try {
        rows = await evaluateUnit(unit, plan, indexById, deps);
      } catch (error) {
        broken = true;
        throw error;
      }
      stats.prompts += unit.queries.length;
      // A batch interrupted by the signal may hold "aborted" failures that say nothing about the VLM:
      // drop it whole; the rerun redoes it (and finds completed requests in the cache).
      if (deps.signal?.aborted) break;
      deps.store.put(plan.runId, rows);
      stats.evaluated += rows.length;
      stats.failures += rows.filter((row) => row.failure !== null).length;
      progress.advance(rows.length);
      // A fast in-process VLM (the simulator) resolves through microtasks only; yield to the event
      // loop so signals (Ctrl-C → abort) and timers are handled between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, deps.concurrency ?? 4) }, worker));
  } finally {
    progress.finish();
  }
  stats.aborted = stats.skipped + stats.evaluated < planned;
  stats.seconds = (performance.now() - started) / 1000;
  return stats;
}

async function evaluateUnit(
  unit: WorkUnit,
  plan: EvalPlan,
  indexById: ReadonlyMap<string, VqaItem>,
  deps: RunnerDeps,
): Promise<EvalPrediction[]> {
  const { retriever, shot, queries } = unit;
  const selections = await retriever.select(queries, shot);
  if (selections.length !== queries.length)
    throw new Error(`${retriever.name} returned ${selections.length} selections for ${queries.length} queries`);
  const prompts = queries.map((query, i) => {
    checkDemonstrations(retriever.name, query, shot, selections[i], indexById);
    return buildPrompt(query, selections[i], indexById, plan.order);
  });
  const answers = await answerPrompts(prompts, queries, deps);
  // Backends may throw on abort instead of returning failures; the caller drops this batch.
  if (answers === null) return [];
  return queries.map((query, i): EvalPrediction => {
    const a = answers[i];
    return {
      retriever: retriever.name,
      shot,
      questionId: query.questionId,
      demonstrations: prompts[i].demonstrations.map((d) => d.questionId),
      promptHash: a.promptHash,
      rawAnswer: a.rawAnswer,
      answer: a.answer,
      accuracy: a.accuracy,
      failure: a.failure,
    };
  });
}
