/**
 * Run summary of VLM calls: what a user needs to judge a run (did requests fail, why, how fast, how
 * many tokens). Failures are counted by reason, the part of the error text before the first colon.
 */

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
  failures: { total: number; byReason: Record<string, number> };
  /** HTTP requests sent, including retries and `/tokenize` calls. */
  httpRequests: number;
  retries: number;
  /** End-to-end latency per call (all attempts), milliseconds. */
  latencyMs: LatencySummary;
  promptTokens: number;
  completionTokens: number;
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

export function failureReason(error: string): string {
  const colon = error.indexOf(":");
  return colon > 0 ? error.slice(0, colon) : error;
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
  };
}

/** Mutable counters behind `getStats()`. */
export class StatsRecorder {
  calls = 0;
  httpRequests = 0;
  retries = 0;
  promptTokens = 0;
  completionTokens = 0;
  private readonly failures = new Map<string, number>();
  private latencies: number[] = [];

  recordCall(latencyMs: number, error?: string): void {
    this.calls++;
    this.latencies.push(latencyMs);
    if (error !== undefined) {
      const reason = failureReason(error);
      this.failures.set(reason, (this.failures.get(reason) ?? 0) + 1);
    }
  }

  summary(): VlmRunStats {
    const byReason: Record<string, number> = {};
    let total = 0;
    for (const [reason, count] of [...this.failures].sort()) {
      byReason[reason] = count;
      total += count;
    }
    return {
      ...emptyStats(),
      calls: this.calls,
      failures: { total, byReason },
      httpRequests: this.httpRequests,
      retries: this.retries,
      latencyMs: summarizeLatencies(this.latencies),
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
    };
  }
}
