/**
 * Counts what a stage really asked of the VLM: a wrapper placed between the response cache and the
 * backend sees only the requests the cache did not answer (the calls), and which of them failed.
 * Cache hits come from the cache wrapper's own statistics.
 */
import { hasStats } from "../vlm/stats.js";
import type { CallOptions, GenerateResult, Outcome, ScoreResult, Vlm, VlmPrompt } from "../vlm/types.js";
import { isFailure } from "../vlm/types.js";

export interface VlmCalls {
  /** Requests sent to the backend (generate + score), after cache hits and in-batch duplicates. */
  calls: number;
  /** Requests answered by the workspace's response cache. */
  cacheHits: number;
  /** Requests that failed after the backend's retries, by typed reason. */
  failures: number;
  failuresByReason: Record<string, number>;
}

export interface CallCounter {
  /** Requests sent so far (read by the progress line). */
  readonly calls: number;
  /** The backend with counting around it. */
  wrap(backend: Vlm): Vlm;
  /** The counts, with cache hits from `outer` when it is the cache wrapper. */
  summary(outer: Vlm): VlmCalls;
}

export function callCounter(): CallCounter {
  let calls = 0;
  const reasons = new Map<string, number>();
  const count = <T>(outcomes: Outcome<T>[]): Outcome<T>[] => {
    calls += outcomes.length;
    for (const o of outcomes)
      if (isFailure(o)) {
        reasons.set(o.reason, (reasons.get(o.reason) ?? 0) + 1);
      }
    return outcomes;
  };
  return {
    get calls() {
      return calls;
    },
    wrap(backend: Vlm): Vlm {
      return {
        id: backend.id,
        generate: async (prompts: VlmPrompt[], options?: CallOptions): Promise<Outcome<GenerateResult>[]> =>
          count(await backend.generate(prompts, options)),
        scoreAnswer: async (
          requests: { prompt: VlmPrompt; answer: string }[],
          options?: CallOptions,
        ): Promise<Outcome<ScoreResult>[]> => count(await backend.scoreAnswer(requests, options)),
      };
    },
    summary(outer: Vlm): VlmCalls {
      const failuresByReason = Object.fromEntries([...reasons].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      const failures = [...reasons.values()].reduce((s, n) => s + n, 0);
      return { calls, cacheHits: hasStats(outer) ? outer.getStats().cacheHits : 0, failures, failuresByReason };
    },
  };
}
