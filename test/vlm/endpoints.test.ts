import { describe, expect, it } from "vitest";
import { EndpointPool } from "../../src/vlm/endpoints.js";

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
});
