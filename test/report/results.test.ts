import { describe, expect, it } from "vitest";
import { type ScoredRow, summarizeEvaluation } from "../../src/report/results.js";

function rows(retriever: string, shot: number, accuracies: (number | null)[]): ScoredRow[] {
  return accuracies.map((accuracy, i) => ({
    retriever,
    shot,
    questionId: String(i),
    accuracy,
    failure: accuracy === null ? "HTTP 500" : null,
  }));
}

describe("summarizeEvaluation", () => {
  it("reports mean accuracy in percent over successful questions and counts failures separately", () => {
    // (1 + 0.3 + 0.6 + 0) / 4 = 0.475 → 47.5 %; the failed question is not scored as 0.
    const summary = summarizeEvaluation(rows("random", 1, [1, 0.3, null, 0.6, 0]), { seed: 1, resamples: 500 });
    expect(summary.cells).toHaveLength(1);
    const cell = summary.cells[0];
    expect(cell).toMatchObject({ retriever: "random", shot: 1, n: 4, failures: 1 });
    expect(cell.accuracy).toBeCloseTo(47.5, 10);
    expect(cell.ci?.lower).toBeLessThanOrEqual(47.5);
    expect(cell.ci?.upper).toBeGreaterThanOrEqual(47.5);
  });

  it("gives a degenerate CI for constant scores and a binomial-width CI for a fair coin", () => {
    const constant = summarizeEvaluation(rows("random", 1, Array(50).fill(0.6)), { seed: 2, resamples: 500 });
    expect(constant.cells[0].ci?.lower).toBeCloseTo(60, 10);
    expect(constant.cells[0].ci?.upper).toBeCloseTo(60, 10);
    // 400 questions, half right: normal-approximation half-width 1.96·sqrt(.25/400) = 4.9 points.
    const coin = summarizeEvaluation(
      rows(
        "random",
        1,
        Array.from({ length: 400 }, (_, i) => i % 2),
      ),
      { seed: 3, resamples: 4000 },
    );
    const ci = coin.cells[0].ci!;
    expect(50 - ci.lower).toBeGreaterThan(4.2);
    expect(50 - ci.lower).toBeLessThan(5.6);
    expect(ci.upper - 50).toBeGreaterThan(4.2);
    expect(ci.upper - 50).toBeLessThan(5.6);
  });

  it("reports no accuracy (not 0) for a cell where every call failed", () => {
    const summary = summarizeEvaluation(rows("random", 2, [null, null]), { seed: 1, resamples: 200 });
    expect(summary.cells[0]).toEqual({ retriever: "random", shot: 2, n: 0, failures: 2, accuracy: null, ci: null });
  });

  it("pairs each retriever with random on the same questions only, with exact McNemar on acc = 1", () => {
    // 20 questions. Baseline: all 0. Retriever: 1 on questions 0-2 (3 wins, no losses), 0 elsewhere.
    // McNemar b = 3, c = 0 → p = 2·2^-3 = 0.25; the paired bootstrap CI must include 0 (P(no win drawn) ≈ 0.039).
    const base = rows("random", 1, Array(20).fill(0));
    const mine = rows(
      "topk-image",
      1,
      Array.from({ length: 20 }, (_, i) => (i < 3 ? 1 : 0)),
    );
    const summary = summarizeEvaluation([...base, ...mine], { seed: 4, resamples: 4000 });
    expect(summary.comparisons).toHaveLength(1);
    const c = summary.comparisons[0];
    expect(c).toMatchObject({ retriever: "topk-image", shot: 1, baseline: "random", baselineShot: 1, n: 20 });
    expect(c.difference).toBeCloseTo(15, 10);
    expect(c.mcnemar).toMatchObject({ onlyRetriever: 3, onlyBaseline: 0 });
    expect(c.mcnemar.pValue).toBeCloseTo(0.25, 12);
    expect(c.ci.lower).toBe(0);
    expect(c.significant).toBe(false);
  });

  it("flags a large consistent improvement as significant", () => {
    // 40 questions: retriever right on 30 where the baseline is wrong → +75 points, McNemar p = 2·2^-30.
    const base = rows("random", 2, Array(40).fill(0));
    const mine = rows(
      "oracle",
      2,
      Array.from({ length: 40 }, (_, i) => (i < 30 ? 1 : 0)),
    );
    const c = summarizeEvaluation([...base, ...mine], { seed: 5, resamples: 2000 }).comparisons[0];
    expect(c.difference).toBeCloseTo(75, 10);
    expect(c.mcnemar.pValue).toBeCloseTo(2 * 2 ** -30, 20);
    expect(c.significant).toBe(true);
    expect(c.ci.lower).toBeGreaterThan(50);
    expect(c.pValue).toBeLessThan(0.001);
  });

  it("drops a question from the pair when either side failed, and compares zero-shot with random at every shot", () => {
    const data = [
      ...rows("zero", 0, [1, 0, 1, 0]),
      ...rows("random", 1, [1, null, 0, 0]),
      ...rows("random", 2, [0, 0, 0, 0]),
    ];
    const summary = summarizeEvaluation(data, { seed: 6, resamples: 500 });
    const vs1 = summary.comparisons.find((c) => c.baselineShot === 1)!;
    const vs2 = summary.comparisons.find((c) => c.baselineShot === 2)!;
    expect(vs1).toMatchObject({ retriever: "zero", shot: 0, n: 3 });
    expect(vs1.difference).toBeCloseTo(((1 + 1 + 0) / 3 - (1 + 0 + 0) / 3) * 100, 10);
    expect(vs2).toMatchObject({ retriever: "zero", shot: 0, n: 4, difference: 50 });
  });

  it("keeps each row's interval unchanged when another retriever is added (per-cell seeds)", () => {
    const base = rows(
      "random",
      1,
      Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? 1 : 0)),
    );
    const a = summarizeEvaluation(base, { seed: 7, resamples: 1000 });
    const b = summarizeEvaluation([...base, ...rows("zero", 0, Array(60).fill(0))], { seed: 7, resamples: 1000 });
    expect(b.cells.find((c) => c.retriever === "random")).toEqual(a.cells[0]);
    // Same seed, same input → bit-identical interval.
    expect(summarizeEvaluation(base, { seed: 7, resamples: 1000 }).cells[0]).toEqual(a.cells[0]);
  });

  it("notes a missing baseline instead of inventing comparisons", () => {
    const summary = summarizeEvaluation(rows("topk-text", 1, [1, 0]), { seed: 1, resamples: 200 });
    expect(summary.comparisons).toEqual([]);
    expect(summary.notes[0]).toMatch(/no "random" predictions/);
  });

  it("widens the CI when questions sharing an image are resampled together", () => {
    // Two questions per image with identical outcomes: clustering halves the effective sample size.
    const accuracies = Array.from({ length: 200 }, (_, i) => (Math.floor(i / 2) % 2 === 0 ? 1 : 0));
    const data = rows("random", 1, accuracies);
    const clusters = new Map(data.map((r) => [r.questionId, `img${Math.floor(Number(r.questionId) / 2)}`]));
    const plain = summarizeEvaluation(data, { seed: 9, resamples: 4000 }).cells[0].ci!;
    const grouped = summarizeEvaluation(data, { seed: 9, resamples: 4000, clusters });
    const clustered = grouped.cells[0].ci!;
    expect(grouped.clustered).toBe(true);
    // Width ratio ≈ sqrt(2).
    const ratio = (clustered.upper - clustered.lower) / (plain.upper - plain.lower);
    expect(ratio).toBeGreaterThan(1.2);
    expect(ratio).toBeLessThan(1.65);
  });

  it("orders rows by the given retriever order, then by shot", () => {
    const data = [...rows("topk-image", 2, [1]), ...rows("random", 2, [0]), ...rows("random", 1, [1])];
    const summary = summarizeEvaluation(data, { seed: 1, resamples: 100, retrieverOrder: ["random", "topk-image"] });
    expect(summary.cells.map((c) => `${c.retriever}@${c.shot}`)).toEqual(["random@1", "random@2", "topk-image@2"]);
  });
});
