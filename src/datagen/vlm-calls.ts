/**
 * Counts what a stage really asked of the VLM: a wrapper placed between the response cache and the
 * backend sees only the requests the cache did not answer (the calls), and which of them failed.
 * Cache hits come from the cache wrapper's own statistics. A request refused by the client's open
 * circuit breaker stops the stage (a LeverError), as it stops an evaluation.
 */

import { LeverError } from "../util/errors.js";
import {
  activityText,
  countFailure,
  type FailureCounts,
  failureSummary,
  type HasActivity,
  hasActivity,
  hasStats,
} from "../vlm/stats.js";
import type {
  CallOptions,
  GenerateResult,
  Outcome,
  ScoreResult,
  Vlm,
  VlmFailureReason,
  VlmPrompt,
} from "../vlm/types.js";
import { isFailure, preflight } from "../vlm/types.js";

export interface VlmCalls {
  /** Requests sent to the backend (generate + score), after cache hits and in-batch duplicates. */
  calls: number;
  /** Requests answered by the workspace's response cache. */
  cacheHits: number;
  /** Requests that failed after the backend's retries, by typed reason. */
  failures: number;
  failuresByReason: FailureCounts;
}

export interface CallCounter {
  /** Requests sent so far. */
  readonly calls: number;
  /** The progress line's activity: "VLM calls N", then what the backend is retrying or waiting for. */
  activity(): string;
  /** The backend with counting around it; its preflight check and activity pass through. */
  wrap(backend: Vlm): Vlm & HasActivity;
  /** The counts, with cache hits from `outer` when it is the cache wrapper. */
  summary(outer: Vlm): VlmCalls;
}

export function callCounter(): CallCounter {
  let calls = 0;
  let wrapped: Vlm | null = null; // the backend, for its activity
  const reasons = new Map<VlmFailureReason, number>();
  const count = <T>(outcomes: Outcome<T>[]): Outcome<T>[] => {
    calls += outcomes.length;
    for (const o of outcomes) {
      if (!isFailure(o)) continue;
      // The client's breaker opened: every further request would be refused too, so the stage stops
      // here (its finished items are kept) instead of recording each remaining item as failed.
      if (o.reason === "circuit-open")
        throw new LeverError(`stopped: ${o.message}. Finished items are kept; rerun the same command to resume`);
      countFailure(reasons, o);
    }
    return outcomes;
  };
  return {
    get calls() {
      return calls;
    },
    activity(): string {
      const detail = activityText(wrapped);
      return detail === "" ? `VLM calls ${calls}` : `VLM calls ${calls}, ${detail}`;
    },
    wrap(backend: Vlm): Vlm & HasActivity {
      wrapped = backend;
      return {
        id: backend.id,
        preflight: (options) => preflight(backend, options),
        activity: () => (hasActivity(backend) ? backend.activity() : null),
        generate: async (prompts: VlmPrompt[], options?: CallOptions): Promise<Outcome<GenerateResult>[]> =>
          count(await backend.generate(prompts, options)),
        scoreAnswer: async (
          requests: { prompt: VlmPrompt; answer: string }[],
          options?: CallOptions,
        ): Promise<Outcome<ScoreResult>[]> => count(await backend.scoreAnswer(requests, options)),
      };
    },
    summary(outer: Vlm): VlmCalls {
      const { total, byReason } = failureSummary(reasons);
      return {
        calls,
        cacheHits: hasStats(outer) ? outer.getStats().cacheHits : 0,
        failures: total,
        failuresByReason: byReason,
      };
    },
  };
}
