/**
 * Dispatch over replica endpoints (independent vLLM/SGLang servers of the same model): a per-endpoint
 * concurrency limit, least-busy choice with round-robin tie-breaking, and two levels of protection:
 *
 * - Cool-down (per endpoint): after `cooldownAfter` consecutive failures, and no success within the
 *   last `cooldownMs`, an endpoint rests for `cooldownMs`, then takes one probe request at a time
 *   until one succeeds. The "no recent success" condition keeps a server that fails only some
 *   prompts (and answers the others) at full speed.
 * - Circuit breaker (the whole pool): when every endpoint has failed `cooldownAfter` times in a row
 *   and none has answered successfully for `breakerMs` (measured from the start of the first failed
 *   attempt, so hanging requests count from when they were sent), the pool opens for good: waiting
 *   and later requests are refused with a `CircuitOpenError` that names the endpoints and their last
 *   failure, and the caller stops the run instead of grinding through retries.
 */
import { type VlmFailure, vlmFailure } from "./types.js";

export interface EndpointPoolOptions {
  concurrency: number;
  cooldownAfter: number;
  cooldownMs: number;
  breakerMs: number;
  now?: () => number;
}

export interface EndpointSnapshot {
  url: string;
  inFlight: number;
  requests: number;
  failures: number;
  consecutiveFailures: number;
  cooldowns: number;
  coolingForMs: number;
  /** Since when this endpoint has been failing with no success (ms), 0 when it is healthy. */
  failingForMs: number;
}

export interface Lease {
  readonly url: string;
  /**
   * Ends the lease: "ok" resets the failure count, "fail" counts toward cool-down and the breaker
   * (with the failure, for the breaker's message), "neutral" neither.
   */
  release(outcome: "ok" | "fail" | "neutral", failure?: VlmFailure): void;
}

/** Thrown by `acquire` once the breaker is open; `failure` is what the refused request reports. */
export class CircuitOpenError extends Error {
  readonly failure: VlmFailure;
  constructor(message: string) {
    super(message);
    this.name = "CircuitOpenError";
    this.failure = vlmFailure("circuit-open", message);
  }
}

interface Endpoint {
  url: string;
  inFlight: number;
  requests: number;
  failures: number;
  consecutiveFailures: number;
  cooldowns: number;
  coolUntil: number;
  /** Cooled down and not yet answered successfully since: one request at a time. */
  probing: boolean;
  lastSuccessAt: number;
  /** Start of the first failed attempt of the current run of failures. */
  failingSince: number;
  lastFailure: VlmFailure | null;
}

interface Waiter {
  avoid: string | undefined;
  resolve: (lease: Lease) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class EndpointPool {
  private readonly endpoints: Endpoint[];
  private readonly waiters: Waiter[] = [];
  private readonly now: () => number;
  private nextStart = 0;
  private wakeTimer: NodeJS.Timeout | null = null;
  private open: CircuitOpenError | null = null;

  constructor(
    urls: string[],
    private readonly options: EndpointPoolOptions,
  ) {
    if (urls.length === 0) throw new Error("EndpointPool: no endpoints");
    this.endpoints = urls.map((url) => ({
      url,
      inFlight: 0,
      requests: 0,
      failures: 0,
      consecutiveFailures: 0,
      cooldowns: 0,
      coolUntil: 0,
      probing: false,
      lastSuccessAt: Number.NEGATIVE_INFINITY,
      failingSince: 0,
      lastFailure: null,
    }));
    this.now = options.now ?? Date.now;
  }

  /**
   * Waits for a free slot on a healthy endpoint; prefers an endpoint other than `avoid` (the one that
   * just failed). Rejects with a CircuitOpenError once the breaker is open, and with the signal's
   * reason when it aborts.
   */
  acquire(signal?: AbortSignal, avoid?: string): Promise<Lease> {
    signal?.throwIfAborted();
    this.checkBreaker();
    if (this.open !== null) return Promise.reject(this.open);
    const endpoint = this.pick(avoid);
    if (endpoint !== null && this.waiters.length === 0) return Promise.resolve(this.lease(endpoint));
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        avoid,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.waiters.push(waiter);
      this.drain();
    });
  }

  snapshot(): EndpointSnapshot[] {
    const now = this.now();
    return this.endpoints.map((e) => ({
      url: e.url,
      inFlight: e.inFlight,
      requests: e.requests,
      failures: e.failures,
      consecutiveFailures: e.consecutiveFailures,
      cooldowns: e.cooldowns,
      coolingForMs: Math.max(0, e.coolUntil - now),
      failingForMs: this.failing(e) ? Math.max(0, now - this.failingStart(e)) : 0,
    }));
  }

  /** Requests waiting for a slot. */
  waiting(): number {
    return this.waiters.length;
  }

  /** How long every endpoint has been failing (ms), or null while any of them is healthy. */
  allFailingForMs(): number | null {
    if (!this.endpoints.every((e) => this.failing(e))) return null;
    const now = this.now();
    return Math.max(0, Math.min(...this.endpoints.map((e) => now - this.failingStart(e))));
  }

  /** The breaker's refusal once it has opened, else null. */
  breakerOpen(): CircuitOpenError | null {
    this.checkBreaker();
    return this.open;
  }

  private failing(e: Endpoint): boolean {
    return e.consecutiveFailures >= this.options.cooldownAfter;
  }

  private failingStart(e: Endpoint): number {
    return Math.max(e.failingSince, e.lastSuccessAt);
  }

  private capacity(e: Endpoint): number {
    return e.probing ? 1 : this.options.concurrency;
  }

  private available(e: Endpoint, now: number): boolean {
    return e.coolUntil <= now && e.inFlight < this.capacity(e);
  }

  private pick(avoid: string | undefined): Endpoint | null {
    const now = this.now();
    const n = this.endpoints.length;
    let best: Endpoint | null = null;
    let bestAvoided: Endpoint | null = null;
    for (let k = 0; k < n; k++) {
      const e = this.endpoints[(this.nextStart + k) % n];
      if (!this.available(e, now)) continue;
      if (e.url === avoid) {
        if (bestAvoided === null || e.inFlight < bestAvoided.inFlight) bestAvoided = e;
      } else if (best === null || e.inFlight < best.inFlight) best = e;
    }
    const chosen = best ?? bestAvoided;
    if (chosen !== null) this.nextStart = (this.endpoints.indexOf(chosen) + 1) % n;
    return chosen;
  }

  private lease(e: Endpoint): Lease {
    e.inFlight++;
    e.requests++;
    const startedAt = this.now();
    let released = false;
    return {
      url: e.url,
      release: (outcome, failure) => {
        if (released) return;
        released = true;
        e.inFlight--;
        const now = this.now();
        if (outcome === "ok") {
          e.consecutiveFailures = 0;
          e.probing = false;
          e.lastSuccessAt = now;
        } else if (outcome === "fail") {
          if (e.consecutiveFailures === 0 || startedAt < e.failingSince) e.failingSince = startedAt;
          e.failures++;
          e.consecutiveFailures++;
          if (failure !== undefined) e.lastFailure = failure;
          // Requests already in flight when the endpoint went cold do not start another cool-down.
          const rested = e.coolUntil <= now;
          const recentSuccess = now - e.lastSuccessAt < this.options.cooldownMs;
          if (this.failing(e) && rested && !recentSuccess) {
            e.coolUntil = now + this.options.cooldownMs;
            e.cooldowns++;
            e.probing = true;
          }
        }
        this.drain();
      },
    };
  }

  /** Opens the breaker when every endpoint has been failing for `breakerMs`; refuses every waiter. */
  private checkBreaker(): void {
    if (this.open !== null) return;
    const failingFor = this.allFailingForMs();
    if (failingFor === null || failingFor < this.options.breakerMs) return;
    const detail = this.endpoints
      .map((e) => {
        const last = e.lastFailure === null ? "failing" : `${e.lastFailure.reason}: ${e.lastFailure.message}`;
        return `${e.url} (${last.length > 160 ? `${last.slice(0, 160)}…` : last})`;
      })
      .join("; ");
    const n = this.endpoints.length;
    this.open = new CircuitOpenError(
      `${n === 1 ? "the VLM endpoint has" : `all ${n} VLM endpoints have`} been failing for ${seconds(failingFor)} ` +
        `with no successful answer (breakerMs ${this.options.breakerMs}); last failure: ${detail}`,
    );
    for (const waiter of this.waiters.splice(0)) {
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.reject(this.open);
    }
  }

  /** Hands free slots to waiters in arrival order; sleeps until the next cool-down or breaker deadline. */
  private drain(): void {
    this.checkBreaker();
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0];
      const endpoint = this.pick(waiter.avoid);
      if (endpoint === null) break;
      this.waiters.shift();
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(this.lease(endpoint));
    }
    this.scheduleWake();
  }

  private scheduleWake(): void {
    if (this.wakeTimer !== null) {
      clearTimeout(this.wakeTimer);
      this.wakeTimer = null;
    }
    if (this.waiters.length === 0) return;
    const now = this.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const e of this.endpoints) if (e.coolUntil > now) earliest = Math.min(earliest, e.coolUntil);
    const failingFor = this.allFailingForMs();
    if (failingFor !== null) earliest = Math.min(earliest, now + this.options.breakerMs - failingFor);
    if (earliest === Number.POSITIVE_INFINITY) return; // a release will drain
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = null;
        this.drain();
      },
      Math.max(1, earliest - now),
    );
  }
}

/** "0.3 s", "12 s". */
function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
