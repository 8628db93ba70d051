/**
 * Dispatch over replica endpoints (independent vLLM/SGLang servers of the same model): a per-endpoint
 * concurrency limit, least-busy choice with round-robin tie-breaking, and a circuit breaker: after
 * `cooldownAfter` consecutive failures an endpoint rests for `cooldownMs`, then takes one probe
 * request at a time until it succeeds again.
 */

export interface EndpointPoolOptions {
  concurrency: number;
  cooldownAfter: number;
  cooldownMs: number;
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
}

export interface Lease {
  readonly url: string;
  /** Ends the lease: "ok" resets the failure count, "fail" counts toward cool-down, "neutral" neither. */
  release(outcome: "ok" | "fail" | "neutral"): void;
}

interface Endpoint {
  url: string;
  inFlight: number;
  requests: number;
  failures: number;
  consecutiveFailures: number;
  cooldowns: number;
  coolUntil: number;
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
    }));
    this.now = options.now ?? Date.now;
  }

  /** Waits for a free slot on a healthy endpoint; prefers an endpoint other than `avoid` (the one that just failed). */
  acquire(signal?: AbortSignal, avoid?: string): Promise<Lease> {
    signal?.throwIfAborted();
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
    }));
  }

  private capacity(e: Endpoint): number {
    // A recovering endpoint gets one probe at a time.
    return e.consecutiveFailures >= this.options.cooldownAfter ? 1 : this.options.concurrency;
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
    let released = false;
    return {
      url: e.url,
      release: (outcome) => {
        if (released) return;
        released = true;
        e.inFlight--;
        if (outcome === "ok") e.consecutiveFailures = 0;
        else if (outcome === "fail") {
          e.failures++;
          e.consecutiveFailures++;
          // Requests already in flight when the endpoint went cold do not start another cool-down.
          const now = this.now();
          if (e.consecutiveFailures >= this.options.cooldownAfter && e.coolUntil <= now) {
            e.coolUntil = now + this.options.cooldownMs;
            e.cooldowns++;
          }
        }
        this.drain();
      },
    };
  }

  /** Hands free slots to waiters in arrival order; sleeps until the next cool-down ends if that is all that blocks them. */
  private drain(): void {
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
