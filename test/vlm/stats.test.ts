import { describe, expect, it } from "vitest";
import { describeActivity, percentile, StatsRecorder, summarizeLatencies } from "../../src/vlm/stats.js";
import { vlmFailure } from "../../src/vlm/types.js";

describe("latency percentiles", () => {
  it("uses the nearest-rank definition (hand-computed on 1..10 and 1..200)", () => {
    const ten = Float64Array.from({ length: 10 }, (_, i) => i + 1);
    expect(percentile(ten, 0.5)).toBe(5); // ceil(5) = 5th value
    expect(percentile(ten, 0.9)).toBe(9);
    expect(percentile(ten, 0.99)).toBe(10); // ceil(9.9) = 10th
    const many = Float64Array.from({ length: 200 }, (_, i) => i + 1);
    expect(percentile(many, 0.99)).toBe(198);
    expect(percentile([], 0.5)).toBe(0);
  });

  it("sorts unsorted input numerically before ranking", () => {
    const s = summarizeLatencies([30, 4, 100, 2, 10]);
    expect(s).toEqual({ count: 5, p50: 10, p90: 100, p99: 100, max: 100, mean: 29.2 });
  });
});

describe("StatsRecorder", () => {
  it("counts failures by their typed reason (messages are never parsed)", () => {
    const r = new StatsRecorder();
    r.recordCall(5);
    r.recordCall(7, vlmFailure("timeout", "no response within 10 ms"));
    r.recordCall(9, vlmFailure("timeout", "again: with a colon"));
    r.recordCall(11, vlmFailure("http-4xx", "HTTP 400 bad"));
    r.recordCall(12, vlmFailure("answer-span", "http-5xx: looks like another reason"));
    const s = r.summary();
    expect(s.calls).toBe(5);
    expect(s.failures).toEqual({ total: 4, byReason: { "answer-span": 1, "http-4xx": 1, timeout: 2 } });
    expect(Object.keys(s.failures.byReason)).toEqual(["answer-span", "http-4xx", "timeout"]);
    expect(s.latencyMs.count).toBe(5);
  });
});

describe("describeActivity", () => {
  const calm = {
    inFlight: 8,
    waiting: 24,
    retrying: 0,
    endpoints: 2,
    cooling: 0,
    coolingForMs: 0,
    failingForMs: null,
    breakerMs: 20_000,
  };

  it("says nothing while requests simply flow (queued requests are normal)", () => {
    expect(describeActivity(calm)).toBe("");
  });

  it("names retries, cooling endpoints with the requests waiting for them, and time without success", () => {
    expect(describeActivity({ ...calm, retrying: 3 })).toBe("retrying 3");
    expect(describeActivity({ ...calm, retrying: 3, cooling: 1, coolingForMs: 4_100 })).toBe(
      "retrying 3, 1/2 endpoints cooling 5 s (24 waiting)",
    );
    expect(
      describeActivity({
        ...calm,
        endpoints: 1,
        cooling: 1,
        coolingForMs: 900,
        waiting: 0,
        failingForMs: 12_000,
      }),
    ).toBe("1/1 endpoint cooling 1 s, no success for 12 s (stop at 20 s)");
  });
});
