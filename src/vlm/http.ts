/**
 * One JSON POST with retries: exponential backoff with jitter (seeded `Rng`), `Retry-After` on 429,
 * a per-attempt timeout, and endpoint health reporting (cool-down, circuit breaker). A request that
 * keeps failing resolves to a typed failure; only the caller's AbortSignal makes it throw.
 */
import type { Rng } from "../util/rng.js";
import { CircuitOpenError, type EndpointPool, type Lease } from "./endpoints.js";
import type { StatsRecorder } from "./stats.js";
import type { Transport } from "./transport.js";
import { type VlmFailure, vlmFailure } from "./types.js";

export interface RetryPolicy {
  maxRetries: number;
  timeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Longest `Retry-After` we honour. */
  maxRetryAfterMs: number;
}

export type PostResult = { ok: true; json: unknown; url: string } | { ok: false; failure: VlmFailure };

/** One HTTP exchange: the parsed JSON, or a failure with what the retry loop and the pool need to know. */
export type Attempt =
  | { ok: true; json: unknown }
  | {
      ok: false;
      failure: VlmFailure;
      retryable: boolean;
      retryAfterMs?: number;
      health: "fail" | "neutral";
    };

export interface SendContext {
  headers: Record<string, string>;
  transport: Transport;
  timeoutMs: number;
}

export interface PostContext {
  pool: EndpointPool;
  policy: RetryPolicy;
  rng: Rng;
  stats: StatsRecorder;
  headers: Record<string, string>;
  transport: Transport;
}

/**
 * POSTs `body` (JSON text, or its UTF-8 bytes in chunks) to `path` on some endpoint of the pool,
 * retrying transient failures. Once the pool's breaker is open the request fails at once with
 * `circuit-open`.
 */
export async function postJson(
  ctx: PostContext,
  path: string,
  body: string | readonly Uint8Array[],
  signal?: AbortSignal,
): Promise<PostResult> {
  const chunks = typeof body === "string" ? [Buffer.from(body, "utf8")] : body;
  const send: SendContext = { headers: ctx.headers, transport: ctx.transport, timeoutMs: ctx.policy.timeoutMs };
  let lastUrl: string | undefined;
  let last: Attempt | null = null;
  let attempts = 0;
  try {
    for (let attempt = 0; attempt <= ctx.policy.maxRetries; attempt++) {
      attempts = attempt + 1;
      if (attempt > 0) {
        if (attempt === 1) ctx.stats.retrying++;
        ctx.stats.retries++;
        await sleep(backoffMs(ctx, attempt - 1, last?.ok === false ? last.retryAfterMs : undefined), signal);
      }
      let lease: Lease;
      try {
        lease = await ctx.pool.acquire(signal, lastUrl);
      } catch (error) {
        if (error instanceof CircuitOpenError) return { ok: false, failure: error.failure };
        throw error; // the caller's abort
      }
      lastUrl = lease.url;
      let result: Attempt;
      try {
        ctx.stats.httpRequests++;
        result = await sendOnce(send, `${lease.url}${path}`, chunks, signal);
      } catch (error) {
        lease.release("neutral");
        throw error; // only the caller's abort gets here
      }
      if (result.ok) {
        lease.release("ok");
        return { ok: true, json: result.json, url: lease.url };
      }
      lease.release(result.health, result.failure);
      last = result;
      if (!result.retryable) break;
    }
  } finally {
    if (attempts > 1) ctx.stats.retrying--;
  }
  const { failure } = last as Extract<Attempt, { ok: false }>;
  const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
  return { ok: false, failure: vlmFailure(failure.reason, `${failure.message} (${lastUrl}${path}, ${tries})`) };
}

/** Delay before retry number `retry` (0-based): equal jitter over base·2^retry, capped; Retry-After wins when given. */
export function backoffMs(ctx: Pick<PostContext, "policy" | "rng">, retry: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, ctx.policy.maxRetryAfterMs);
  const ceiling = Math.min(ctx.policy.backoffMaxMs, ctx.policy.backoffBaseMs * 2 ** retry);
  return ceiling / 2 + (ceiling / 2) * ctx.rng.next();
}

/**
 * One request with a timeout: a POST of `body`, or a GET when `body` is null. Resolves to the JSON
 * or a classified failure; throws only when `signal` aborts (with its reason).
 */
export async function sendOnce(
  ctx: SendContext,
  url: string,
  body: readonly Uint8Array[] | null,
  signal?: AbortSignal,
): Promise<Attempt> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), ctx.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
  const headers = body === null ? ctx.headers : { "content-type": "application/json", ...ctx.headers };
  try {
    const response = await ctx.transport(url, body, headers, combined);
    const text = response.text;
    if (response.status === 429) {
      return {
        ok: false,
        failure: vlmFailure("rate-limited", `server busy (429) ${snippet(text)}`),
        retryable: true,
        retryAfterMs: parseRetryAfter(response.header("retry-after") ?? null),
        health: "neutral",
      };
    }
    if (response.status >= 500)
      return {
        ok: false,
        failure: vlmFailure("http-5xx", `HTTP ${response.status} ${snippet(text)}`),
        retryable: true,
        health: "fail",
      };
    if (response.status === 408)
      return { ok: false, failure: vlmFailure("timeout", "HTTP 408 request timeout"), retryable: true, health: "fail" };
    if (response.status >= 400)
      return {
        ok: false,
        failure: vlmFailure("http-4xx", `HTTP ${response.status} ${snippet(text)}`),
        retryable: false,
        health: "neutral",
      };
    try {
      return { ok: true, json: JSON.parse(text) };
    } catch {
      // A cut-off body is usually a transient server or proxy fault.
      return {
        ok: false,
        failure: vlmFailure("malformed-response", `response is not JSON: ${snippet(text)}`),
        retryable: true,
        health: "fail",
      };
    }
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.signal.aborted)
      return {
        ok: false,
        failure: vlmFailure("timeout", `no response within ${ctx.timeoutMs} ms`),
        retryable: true,
        health: "fail",
      };
    return {
      ok: false,
      failure: vlmFailure("unreachable", `connection failed: ${errorText(error)}`),
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
