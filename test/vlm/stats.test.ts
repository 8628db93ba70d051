import { describe, expect, it } from "vitest";
import { failureReason, percentile, StatsRecorder, summarizeLatencies } from "../../src/vlm/stats.js";

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
  it("counts failures by the reason before the first colon", () => {
    const r = new StatsRecorder();
    r.recordCall(5);
    r.recordCall(7, "timeout: no response within 10 ms");
    r.recordCall(9, "timeout: again");
    r.recordCall(11, "http-4xx: HTTP 400 bad");
    const s = r.summary();
    expect(s.calls).toBe(4);
    expect(s.failures).toEqual({ total: 3, byReason: { "http-4xx": 1, timeout: 2 } });
    expect(s.latencyMs.count).toBe(4);
    expect(failureReason("no colon here")).toBe("no colon here");
  });
});
