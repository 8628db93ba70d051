import { describe, expect, it } from "vitest";
import { CircuitOpenError, EndpointPool } from "../../src/vlm/endpoints.js";
import { vlmFailure } from "../../src/vlm/types.js";

function clock(start = 1000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe("EndpointPool", () => {
  it("spreads leases over endpoints least-busy first, round-robin on ties", async () => {
    const pool = new EndpointPool(["a", "b"], {
      concurrency: 2,
      cooldownAfter: 3,
      cooldownMs: 1000,
      breakerMs: 60_000,
    });
    const leases = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
    expect(leases.map((l) => l.url)).toEqual(["a", "b", "a"]);
    leases[0].release("ok");
    leases[2].release("ok"); // a is now idle, b has one in flight
    expect((await pool.acquire()).url).toBe("a");
  });

  it("never exceeds the per-endpoint limit and hands freed slots to waiters in order", async () => {
    const pool = new EndpointPool(["a"], { concurrency: 2, cooldownAfter: 3, cooldownMs: 1000, breakerMs: 60_000 });
    const first = await pool.acquire();
    await pool.acquire();
    const order: string[] = [];
    const w1 = pool.acquire().then((l) => {
      order.push("w1");
      return l;
    });
    const w2 = pool.acquire().then((l) => {
      order.push("w2");
      return l;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]);
    expect(pool.snapshot()[0].inFlight).toBe(2);
    first.release("ok");
    await w1;
    expect(order).toEqual(["w1"]);
    (await w1).release("ok");
    await w2;
    expect(order).toEqual(["w1", "w2"]);
  });

  it("cools an endpoint down after consecutive failures and routes around it", async () => {
    const c = clock();
    const pool = new EndpointPool(["a", "b"], {
      concurrency: 4,
      cooldownAfter: 2,
      cooldownMs: 500,
      breakerMs: 60_000,
      now: c.now,
    });
    for (let i = 0; i < 2; i++) (await pool.acquire(undefined, "b")).release("fail"); // "avoid b" → a gets them
    const snap = pool.snapshot();
    expect(snap[0]).toMatchObject({ url: "a", failures: 2, cooldowns: 1, coolingForMs: 500 });
    for (let i = 0; i < 3; i++) expect((await pool.acquire()).url).toBe("b");
    c.t += 500; // cool-down over: a takes one probe at a time
    const probe = await pool.acquire(undefined, "b");
    expect(probe.url).toBe("a");
    expect((await pool.acquire(undefined, "b")).url).toBe("b"); // a is at its probe capacity of 1
    probe.release("ok"); // recovered: full capacity again
    expect(pool.snapshot()[0].consecutiveFailures).toBe(0);
  });

  it("prefers another endpoint than the one to avoid, but uses it when it is the only one", async () => {
    const pool = new EndpointPool(["a", "b"], {
      concurrency: 1,
      cooldownAfter: 3,
      cooldownMs: 1000,
      breakerMs: 60_000,
    });
    expect((await pool.acquire(undefined, "a")).url).toBe("b");
    expect((await pool.acquire(undefined, "a")).url).toBe("a");
  });

  it("waits for the end of a cool-down when every endpoint is cooling", async () => {
    const pool = new EndpointPool(["a"], { concurrency: 1, cooldownAfter: 1, cooldownMs: 60, breakerMs: 60_000 });
    (await pool.acquire()).release("fail");
    const start = performance.now();
    const lease = await pool.acquire();
    expect(performance.now() - start).toBeGreaterThanOrEqual(50);
    expect(lease.url).toBe("a");
  });

  it("rejects a waiting acquire when its signal aborts", async () => {
    const pool = new EndpointPool(["a"], { concurrency: 1, cooldownAfter: 3, cooldownMs: 1000, breakerMs: 60_000 });
    await pool.acquire();
    const controller = new AbortController();
    const waiting = pool.acquire(controller.signal);
    controller.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
  });

  it("does not cool an endpoint that answered successfully within the last cooldownMs (it fails only some prompts)", async () => {
    const c = clock();
    const pool = new EndpointPool(["a"], {
      concurrency: 4,
      cooldownAfter: 2,
      cooldownMs: 500,
      breakerMs: 60_000,
      now: c.now,
    });
    (await pool.acquire()).release("ok");
    c.t += 100;
    for (let i = 0; i < 5; i++) (await pool.acquire()).release("fail");
    expect(pool.snapshot()[0]).toMatchObject({ consecutiveFailures: 5, cooldowns: 0, coolingForMs: 0 });
    const leases = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]); // full capacity, no probing
    for (const l of leases) l.release("neutral");
    c.t += 400; // the success is now cooldownMs old: the next failure cools the endpoint
    (await pool.acquire()).release("fail");
    expect(pool.snapshot()[0]).toMatchObject({ cooldowns: 1, coolingForMs: 500 });
  });
});

describe("circuit breaker", () => {
  const options = { concurrency: 2, cooldownAfter: 2, cooldownMs: 100, breakerMs: 1000 };

  it("opens when every endpoint has been failing for breakerMs, naming each endpoint's last failure", async () => {
    const c = clock();
    const pool = new EndpointPool(["http://a", "http://b"], { ...options, now: c.now });
    for (let i = 0; i < 4; i++) (await pool.acquire()).release("fail", vlmFailure("http-5xx", `HTTP 500 #${i}`));
    expect(pool.allFailingForMs()).toBe(0);
    c.t += 999;
    expect(pool.breakerOpen()).toBeNull();
    expect(pool.allFailingForMs()).toBe(999);
    c.t += 1;
    const open = pool.breakerOpen();
    expect(open).toBeInstanceOf(CircuitOpenError);
    expect(open?.failure.reason).toBe("circuit-open");
    expect(open?.message).toBe(
      "all 2 VLM endpoints have been failing for 1.0 s with no successful answer (breakerMs 1000); last failure: " +
        "http://a (http-5xx: HTTP 500 #2); http://b (http-5xx: HTTP 500 #3)",
    );
    await expect(pool.acquire()).rejects.toBe(open);
    // It stays open: the run is over, even if an endpoint would answer again.
    c.t += 10_000;
    await expect(pool.acquire()).rejects.toBeInstanceOf(CircuitOpenError);
  });

  it("stays closed while any endpoint succeeds", async () => {
    const c = clock();
    const pool = new EndpointPool(["a", "b"], { ...options, now: c.now });
    for (let step = 0; step < 30; step++) {
      c.t += 100;
      const lease = await pool.acquire();
      lease.release(lease.url === "a" ? "fail" : "ok");
    }
    expect(pool.snapshot()[0].consecutiveFailures).toBeGreaterThanOrEqual(2);
    expect(pool.allFailingForMs()).toBeNull();
    expect(pool.breakerOpen()).toBeNull();
  });

  it("counts a failed attempt from when it was sent (a hanging request), not from when it failed", async () => {
    const c = clock();
    const pool = new EndpointPool(["a"], { ...options, cooldownAfter: 1, now: c.now });
    const hanging = await pool.acquire();
    c.t += 1500; // the request timed out after 1.5 s
    hanging.release("fail", vlmFailure("timeout", "no response within 1500 ms"));
    expect(pool.breakerOpen()?.message).toMatch(/failing for 1.5 s .*a \(timeout: no response within 1500 ms\)$/);
  });

  it("refuses requests waiting for a cooled endpoint when the breaker deadline passes (real timers)", async () => {
    const pool = new EndpointPool(["a"], { concurrency: 1, cooldownAfter: 1, cooldownMs: 10_000, breakerMs: 80 });
    (await pool.acquire()).release("fail", vlmFailure("unreachable", "connection refused"));
    const start = performance.now();
    await expect(pool.acquire()).rejects.toBeInstanceOf(CircuitOpenError);
    const waited = performance.now() - start;
    expect(waited).toBeGreaterThanOrEqual(60);
    expect(waited).toBeLessThan(1000); // not the 10 s cool-down
  });
});
