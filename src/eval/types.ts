import type { PredictionRow } from "../store/types.js";

/**
 * Shared types of the ICL evaluation: what a retriever returns, what one stored prediction holds,
 * and the small interfaces through which the runner reaches storage.
 */

export {
  fromPromptOrder,
  PROMPT_ORDERS,
  type PromptOrder,
  toPromptOrder,
} from "../data/trajectories.js";

/**
 * One evaluated (retriever, shot, question): the store's prediction row without its run id.
 * `demonstrations` are in PROMPT order (index 0 rendered first); selection order is recovered with
 * `fromPromptOrder(demonstrations, run order)`. Failed VLM calls keep `failure` and have no accuracy.
 */
export type EvalPrediction = Omit<PredictionRow, "runId">;

/** Where predictions of one run live: the workspace in production, memory in tests. */
export interface PredictionStore {
  /** Every stored prediction of the run. */
  list(runId: string): EvalPrediction[];
  /** Inserts or replaces rows (keyed by run, retriever, shot, question) in one transaction. */
  put(runId: string, rows: EvalPrediction[]): void;
}

/** Key of a prediction inside one run. */
export function predictionKey(retriever: string, shot: number, questionId: string): string {
  return `${retriever}\u0000${shot}\u0000${questionId}`;
}

/** An in-memory PredictionStore (tests, dry runs). */
export class MemoryPredictionStore implements PredictionStore {
  private readonly runs = new Map<string, Map<string, EvalPrediction>>();

  list(runId: string): EvalPrediction[] {
    return [...(this.runs.get(runId)?.values() ?? [])].map((row) => ({ ...row }));
  }

  put(runId: string, rows: EvalPrediction[]): void {
    let run = this.runs.get(runId);
    if (!run) this.runs.set(runId, (run = new Map()));
    for (const row of rows) run.set(predictionKey(row.retriever, row.shot, row.questionId), { ...row });
  }
}
