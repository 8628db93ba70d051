/**
 * One JSON POST with retries: exponential backoff with jitter (seeded `Rng`), `Retry-After` on 429,
 * a per-attempt timeout, and endpoint health reporting. A request that keeps failing resolves to a
 * failure with a reason; only the caller's AbortSignal makes it throw.
 */
import type { Rng } from "../util/rng.js";
import type { EndpointPool } from "./endpoints.js";
import type { StatsRecorder } from "./stats.js";
import type { Transport } from "./transport.js";

export interface RetryPolicy {
  maxRetries: number;
  timeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Longest `Retry-After` we honour. */
  maxRetryAfterMs: number;
}

export type FailureReason = "timeout" | "connection" | "http-429" | "http-5xx" | "http-4xx" | "malformed-response";

export type PostResult =
  | { ok: true; json: unknown; url: string }
  | { ok: false; reason: FailureReason; message: string };

type Attempt =
  | { ok: true; json: unknown }
  | {
      ok: false;
      reason: FailureReason;
      message: string;
      retryable: boolean;
      retryAfterMs?: number;
      health: "fail" | "neutral";
    };

export interface PostContext {
  pool: EndpointPool;
  policy: RetryPolicy;
  rng: Rng;
  stats: StatsRecorder;
  headers: Record<string, string>;
  transport: Transport;
}

/** POSTs `body` (JSON text, or its UTF-8 bytes in chunks) to `path` on some endpoint of the pool, retrying transient failures. */
export async function postJson(
  ctx: PostContext,
  path: string,
  body: string | readonly Uint8Array[],
  signal?: AbortSignal,
): Promise<PostResult> {
  const chunks = typeof body === "string" ? [Buffer.from(body, "utf8")] : body;
  let lastUrl: string | undefined;
  let last: Attempt | null = null;
  let attempts = 0;
  for (let attempt = 0; attempt <= ctx.policy.maxRetries; attempt++) {
    attempts = attempt + 1;
    if (attempt > 0) {
      ctx.stats.retries++;
      await sleep(backoffMs(ctx, attempt - 1, last?.ok === false ? last.retryAfterMs : undefined), signal);
    }
    const lease = await ctx.pool.acquire(signal, lastUrl);
    lastUrl = lease.url;
    let result: Attempt;
    try {
      ctx.stats.httpRequests++;
      result = await attemptOnce(ctx, `${lease.url}${path}`, chunks, signal);
    } catch (error) {
      lease.release("neutral");
      throw error; // only the caller's abort gets here
    }
    lease.release(result.ok ? "ok" : result.health);
    if (result.ok) return { ok: true, json: result.json, url: lease.url };
    last = result;
    if (!result.retryable) break;
  }
  const failure = last as Extract<Attempt, { ok: false }>;
  const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
  return { ok: false, reason: failure.reason, message: `${failure.message} (${lastUrl}${path}, ${tries})` };
}

/** Delay before retry number `retry` (0-based): equal jitter over base·2^retry, capped; Retry-After wins when given. */
export function backoffMs(ctx: Pick<PostContext, "policy" | "rng">, retry: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, ctx.policy.maxRetryAfterMs);
  const ceiling = Math.min(ctx.policy.backoffMaxMs, ctx.policy.backoffBaseMs * 2 ** retry);
  return ceiling / 2 + (ceiling / 2) * ctx.rng.next();
}

async function attemptOnce(
  ctx: PostContext,
  url: string,
  body: readonly Uint8Array[],
  signal?: AbortSignal,
): Promise<Attempt> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), ctx.policy.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
  try {
    const response = await ctx.transport(url, body, { "content-type": "application/json", ...ctx.headers }, combined);
    const text = response.text;
    if (response.status === 429) {
      return {
        ok: false,
        reason: "http-429",
        message: `server busy (429) ${snippet(text)}`,
        retryable: true,
        retryAfterMs: parseRetryAfter(response.header("retry-after") ?? null),
        health: "neutral",
      };
    }
    if (response.status >= 500)
      return {
        ok: false,
        reason: "http-5xx",
        message: `HTTP ${response.status} ${snippet(text)}`,
        retryable: true,
        health: "fail",
      };
    if (response.status === 408)
      return { ok: false, reason: "timeout", message: "HTTP 408 request timeout", retryable: true, health: "fail" };
    if (response.status >= 400)
      return {
        ok: false,
        reason: "http-4xx",
        message: `HTTP ${response.status} ${snippet(text)}`,
        retryable: false,
        health: "neutral",
      };
    try {
      return { ok: true, json: JSON.parse(text) };
    } catch {
      // A cut-off body is usually a transient server or proxy fault.
      return {
        ok: false,
        reason: "malformed-response",
        message: `response is not JSON: ${snippet(text)}`,
        retryable: true,
        health: "fail",
      };
    }
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.signal.aborted)
      return {
        ok: false,
        reason: "timeout",
        message: `no response within ${ctx.policy.timeoutMs} ms`,
        retryable: true,
        health: "fail",
      };
    return {
      ok: false,
      reason: "connection",
      message: `connection failed: ${errorText(error)}`,
      retryable: true,
      health: "fail",
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Retry-After is delta-seconds or an HTTP date (RFC 9110, section 10.2.3). */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    if (cause && typeof cause === "object") {
      const code = "code" in cause ? String(cause.code) : "";
      const message = "message" in cause ? String(cause.message) : "";
      return [error.message, code, message].filter((s) => s !== "").join(" / ");
    }
    return error.message;
  }
  return String(error);
}
