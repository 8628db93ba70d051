/**
 * Run summary of VLM calls: what a user needs to judge a run (did requests fail, why, how fast, how
 * many tokens), counted by typed failure reason; and the live activity (requests retrying, endpoints
 * cooling down, how long nothing has succeeded) that progress lines show while a run waits.
 */
import type { VlmFailure, VlmFailureReason } from "./types.js";

/** Failures counted by reason. */
export type FailureCounts = Partial<Record<VlmFailureReason, number>>;

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface VlmRunStats {
  /** Requests the backend answered or failed (after de-duplication and cache hits). */
  calls: number;
  cacheHits: number;
  cacheMisses: number;
  /** Requests answered by an identical request in the same batch. */
  deduplicated: number;
  failures: { total: number; byReason: FailureCounts };
  /** HTTP requests sent, including retries and `/tokenize` calls. */
  httpRequests: number;
  retries: number;
  /** End-to-end latency per call (all attempts), milliseconds. */
  latencyMs: LatencySummary;
  promptTokens: number;
  completionTokens: number;
  /** Completions longer than the kept maximum, stored cut to it (the OpenAI client: MAX_COMPLETION_CHARS). */
  completionsCut: number;
}

/** Something that can report a run summary (the OpenAI client, the cache wrapper). */
export interface HasStats {
  getStats(): VlmRunStats;
}

export function hasStats(value: unknown): value is HasStats {
  return typeof value === "object" && value !== null && typeof (value as HasStats).getStats === "function";
}

/** Nearest-rank percentile of ascending `sorted` values (p in (0, 1]); 0 for an empty list. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarizeLatencies(values: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length > 0 ? sorted[sorted.length - 1] : 0,
    mean: sorted.length > 0 ? sum / sorted.length : 0,
  };
}

/** Adds one failure to `counts` (by its typed reason). */
export function countFailure(counts: Map<VlmFailureReason, number>, failure: VlmFailure): void {
  counts.set(failure.reason, (counts.get(failure.reason) ?? 0) + 1);
}

/** Counts as a plain object with reasons in name order, and their total. */
export function failureSummary(counts: ReadonlyMap<VlmFailureReason, number>): {
  total: number;
  byReason: FailureCounts;
} {
  const byReason: FailureCounts = {};
  let total = 0;
  for (const [reason, count] of [...counts].sort(([a], [b]) => (a < b ? -1 : 1))) {
    byReason[reason] = count;
    total += count;
  }
  return { total, byReason };
}

export function emptyStats(): VlmRunStats {
  return {
    calls: 0,
    cacheHits: 0,
    cacheMisses: 0,
    deduplicated: 0,
    failures: { total: 0, byReason: {} },
    httpRequests: 0,
    retries: 0,
    latencyMs: summarizeLatencies([]),
    promptTokens: 0,
    completionTokens: 0,
    completionsCut: 0,
  };
}

/** Mutable counters behind `getStats()`. */
export class StatsRecorder {
  calls = 0;
  httpRequests = 0;
  retries = 0;
  promptTokens = 0;
  completionTokens = 0;
  completionsCut = 0;
  /** Requests that failed at least once and are not finished (waiting for or sending a retry). */
  retrying = 0;
  private readonly failures = new Map<VlmFailureReason, number>();
  private latencies: number[] = [];

  recordCall(latencyMs: number, failure?: VlmFailure): void {
    this.calls++;
    this.latencies.push(latencyMs);
    if (failure !== undefined) countFailure(this.failures, failure);
  }

  summary(): VlmRunStats {
    return {
      ...emptyStats(),
      calls: this.calls,
      failures: failureSummary(this.failures),
      httpRequests: this.httpRequests,
      retries: this.retries,
      latencyMs: summarizeLatencies(this.latencies),
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      completionsCut: this.completionsCut,
    };
  }
}

/** What the client is doing right now: the state a progress line shows while a run waits. */
export interface VlmActivity {
  /** HTTP requests in flight. */
  inFlight: number;
  /** Requests waiting for a free slot on a healthy endpoint. */
  waiting: number;
  /** Requests that failed at least once and will be (or are being) retried. */
  retrying: number;
  endpoints: number;
  /** Endpoints resting after consecutive failures, and the longest remaining rest. */
  cooling: number;
  coolingForMs: number;
  /** How long every endpoint has been failing with no success (null while any is healthy). */
  failingForMs: number | null;
  /** When `failingForMs` reaches this, the client stops sending (the circuit breaker). */
  breakerMs: number;
}

/** Something that can report its activity (the OpenAI client; the cache wrapper: its backend's, if any). */
export interface HasActivity {
  activity(): VlmActivity | null;
}

export function hasActivity(value: unknown): value is HasActivity {
  return typeof value === "object" && value !== null && typeof (value as HasActivity).activity === "function";
}

/** What a backend is retrying or waiting for, as `describeActivity` words it; "" when it reports nothing. */
export function activityText(vlm: unknown): string {
  const now = hasActivity(vlm) ? vlm.activity() : null;
  return now === null ? "" : describeActivity(now);
}

/** "retrying 3, 1/2 endpoints cooling 4 s (12 waiting), no success for 9 s (stop at 20 s)"; "" when all is well. */
export function describeActivity(a: VlmActivity): string {
  const parts: string[] = [];
  if (a.retrying > 0) parts.push(`retrying ${a.retrying}`);
  if (a.cooling > 0) {
    const waiting = a.waiting > 0 ? ` (${a.waiting} waiting)` : "";
    parts.push(
      `${a.cooling}/${a.endpoints} endpoint${a.endpoints === 1 ? "" : "s"} cooling ${seconds(a.coolingForMs)}${waiting}`,
    );
  }
  if (a.failingForMs !== null)
    parts.push(`no success for ${seconds(a.failingForMs)} (stop at ${seconds(a.breakerMs)})`);
  return parts.join(", ");
}

function seconds(ms: number): string {
  return `${Math.ceil(ms / 1000)} s`;
}
