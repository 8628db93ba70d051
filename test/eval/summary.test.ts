import { describe, expect, it } from "vitest";
import { summarizeEvaluation } from "../../src/eval/summary.js";
import type { MethodRow } from "../../src/icl/retriever-methods.js";
import { retrieverMethods } from "../../src/icl/retriever-methods.js";
import { compareMethods } from "../../src/metrics/compare.js";
import { summaryCells } from "../helpers/summary.js";

const RUN = "eval-0001";

function rows(retriever: string, shot: number, accuracies: (number | null)[]): MethodRow[] {
  return accuracies.map((accuracy, i) => ({
    retriever,
    shot,
    questionId: String(i),
    accuracy,
    failure: accuracy === null ? "HTTP 500" : null,
    demonstrations: Array.from({ length: shot }, (_, k) => `d${i}-${k}`),
  }));
}

const summarize = (data: MethodRow[], options: Partial<Parameters<typeof summarizeEvaluation>[2]> = {}) =>
  summarizeEvaluation(RUN, data, { seed: 1, resamples: 500, ...options });
const cell = (data: MethodRow[], options: Partial<Parameters<typeof summarizeEvaluation>[2]> = {}) =>
  summaryCells(summarize(data, options))[0];

describe("summarizeEvaluation (the comparison engine on one run's rows)", () => {
  it("reports mean accuracy in percent over successful questions and counts failures separately", () => {
    // (1 + 0.3 + 0.6 + 0) / 4 = 0.475 → 47.5 %; the failed question is not scored as 0.
    const c = cell(rows("random", 1, [1, 0.3, null, 0.6, 0]));
    expect(c).toMatchObject({ retriever: "random", shot: 1, n: 4, failures: 1 });
    expect(c.accuracy).toBeCloseTo(47.5, 10);
    expect(c.ci?.lower).toBeLessThanOrEqual(47.5);
    expect(c.ci?.upper).toBeGreaterThanOrEqual(47.5);
  });

  it("gives a degenerate CI for constant scores and a binomial-width CI for a fair coin", () => {
    const constant = cell(rows("random", 1, Array(50).fill(0.6)), { seed: 2 });
    expect(constant.ci?.lower).toBeCloseTo(60, 10);
    expect(constant.ci?.upper).toBeCloseTo(60, 10);
    // 400 questions, half right: normal-approximation half-width 1.96·sqrt(.25/400) = 4.9 points.
    const coin = cell(
      rows(
        "random",
        1,
        Array.from({ length: 400 }, (_, i) => i % 2),
      ),
      { seed: 3, resamples: 4000 },
    );
    const ci = coin.ci!;
    expect(50 - ci.lower).toBeGreaterThan(4.2);
    expect(50 - ci.lower).toBeLessThan(5.6);
    expect(ci.upper - 50).toBeGreaterThan(4.2);
    expect(ci.upper - 50).toBeLessThan(5.6);
  });

  it("reports no accuracy (not 0) for a cell where every call failed", () => {
    expect(cell(rows("random", 2, [null, null]), { resamples: 200 })).toMatchObject({
      retriever: "random",
      shot: 2,
      n: 0,
      failures: 2,
      accuracy: null,
      ci: null,
    });
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
    const summary = summarize([...base, ...mine], { seed: 4, resamples: 4000 });
    expect(summary?.baseline).toBe(`${RUN}/random`);
    const compared = summaryCells(summary).filter((c) => c.comparison !== null);
    expect(compared).toHaveLength(1);
    const c = compared[0].comparison!;
    expect(compared[0]).toMatchObject({ retriever: "topk-image", shot: 1 });
    expect(c).toMatchObject({ baseline: `${RUN}/random`, pairs: 20, excluded: 0, test: "mcnemar" });
    expect(c.difference).toBeCloseTo(15, 10);
    expect(c.mcnemar).toEqual({ onlyRow: 3, onlyBaseline: 0 });
    expect(c.pValue).toBeCloseTo(0.25, 12);
    expect(c.pHolm).toBeCloseTo(0.25, 12); // a family of one
    expect(c.ci.lower).toBe(0);
    expect(c.significant).toBe(false);
  });

  it("flags a large consistent improvement as significant (after Holm); a reference is compared but never marked", () => {
    // 40 questions: retriever right on 30 where the baseline is wrong → +75 points, McNemar p = 2·2^-30.
    const base = rows("random", 2, Array(40).fill(0));
    const wins = Array.from({ length: 40 }, (_, i) => (i < 30 ? 1 : 0));
    const summary = summarize([...base, ...rows("topk-text", 2, wins), ...rows("oracle", 2, wins)], { seed: 5 });
    const [, topk, oracle] = summaryCells(summary).map((c) => c.comparison);
    expect(topk!.difference).toBeCloseTo(75, 10);
    expect(topk!.pValue).toBeCloseTo(2 * 2 ** -30, 20);
    expect(topk!.significant).toBe(true);
    expect(topk!.ci.lower).toBeGreaterThan(50);
    expect(oracle).toMatchObject({ reference: true, pHolm: null, significant: false });
    expect(summary?.tables[0].comparisons).toBe(1);
  });

  it("drops a question from the pair when either side failed; zero-shot is not compared (no random at shot 0)", () => {
    const data = [
      ...rows("zero", 0, [1, 0, 1, 0]),
      ...rows("random", 1, [1, null, 0, 0]),
      ...rows("topk-image", 1, [1, 1, null, 1]),
    ];
    const summary = summarize(data);
    const cells = summaryCells(summary);
    expect(cells.map((c) => `${c.retriever}@${c.shot}`)).toEqual(["zero@0", "random@1", "topk-image@1"]);
    // Pairs: questions 0 and 3 (1 failed under random, 2 under topk-image) → Δ = (2 − 1)/2.
    expect(cells[2].comparison).toMatchObject({ pairs: 2, excluded: 2, difference: 50 });
    expect(cells[0].comparison).toBeNull();
    expect(summary?.notes).toContain("zero at shot 0 is not compared: the baseline has no predictions at that shot");
  });

  it("keeps each row's interval unchanged when another retriever is added (per-row streams)", () => {
    const base = rows(
      "random",
      1,
      Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? 1 : 0)),
    );
    const a = cell(base, { seed: 7, resamples: 1000 });
    const b = summaryCells(summarize([...base, ...rows("zero", 0, Array(60).fill(0))], { seed: 7, resamples: 1000 }));
    expect(b.find((c) => c.retriever === "random")).toEqual(a);
    // Same seed, same input → bit-identical interval.
    expect(cell(base, { seed: 7, resamples: 1000 })).toEqual(a);
  });

  it("without a random retriever, compares with the first method (lever compare's default) and says so", () => {
    const summary = summarize([
      ...rows("topk-text", 1, [1, 0]),
      ...rows("selector:/x/grpo.safetensors@abcdef12", 1, [1, 1]),
    ]);
    expect(summary?.baseline).toBe(`${RUN}/topk-text`);
    expect(summary?.notes[0]).toMatch(
      /^baseline: eval-0001\/topk-text, the first method \(this run has no random retriever\)/,
    );
    expect(summary?.rows.map((r) => r.label)).toEqual(["topk-text", "selector:grpo"]);
  });

  it("widens the CI when questions sharing an image are resampled together", () => {
    // Two questions per image with identical outcomes: clustering halves the effective sample size.
    const accuracies = Array.from({ length: 200 }, (_, i) => (Math.floor(i / 2) % 2 === 0 ? 1 : 0));
    const data = rows("random", 1, accuracies);
    const clusters = new Map(data.map((r) => [r.questionId, `img${Math.floor(Number(r.questionId) / 2)}`]));
    const plain = cell(data, { seed: 9, resamples: 4000 }).ci!;
    const grouped = summarize(data, { seed: 9, resamples: 4000, clusters });
    const clustered = summaryCells(grouped)[0].ci!;
    expect(grouped?.settings.clustered).toBe(true);
    // Width ratio ≈ sqrt(2).
    const ratio = (clustered.upper - clustered.lower) / (plain.upper - plain.lower);
    expect(ratio).toBeGreaterThan(1.2);
    expect(ratio).toBeLessThan(1.65);
  });

  it("orders rows as lever compare does (zero, random, top-k, references, selectors), then by shot", () => {
    const data = [...rows("topk-image", 2, [1]), ...rows("random", 2, [0]), ...rows("random", 1, [1])];
    expect(summaryCells(summarize(data, { resamples: 100 })).map((c) => `${c.retriever}@${c.shot}`)).toEqual([
      "random@1",
      "random@2",
      "topk-image@2",
    ]);
  });

  it("states its baseline and settings, and how lever compare reproduces them", () => {
    const summary = summarize(rows("random", 1, [1, 0]), { seed: 3, resamples: 300, clusters: new Map() });
    expect(summary?.settings).toEqual({
      seed: 3,
      resamples: 300,
      confidence: 0.95,
      alpha: 0.05,
      power: 0.8,
      test: "mcnemar",
      clustered: true,
    });
    expect(summary?.notes[0]).toBe(
      "baseline: eval-0001/random, the random retriever; `lever compare eval-0001 --baseline eval-0001/random --subsets all --seed 3 --resamples 300 --cluster-by-image` shows these numbers",
    );
    expect(summarizeEvaluation(RUN, [], { seed: 0, resamples: 100 })).toBeNull();
  });

  it("gives lever compare's numbers: the engine on the same methods and settings, even as a first-N table of every question", () => {
    const data = [
      ...rows("random", 1, [1, 0, 0, 1, 0, 0, 1, 0, 0.6, 0]),
      ...rows("topk-image", 1, [1, 1, 0, 1, 1, 0, 1, 0.3, 1, 0]),
    ];
    const summary = summarize(data, { seed: 11 });
    const methods = retrieverMethods(RUN, data).map((f) => f.method);
    const settings = { baseline: `${RUN}/random`, seed: 11, resamples: 500, test: "mcnemar" as const };
    // `lever compare`'s default subsets include 100, 200, …: a run of exactly N questions gets "all", not "first N".
    const compared = compareMethods(methods, { ...settings, subsets: [10, 20] });
    expect(compared.tables.map((t) => t.label)).toEqual(["all"]);
    expect(compared.tables[0].rows).toEqual(summary?.tables[0].rows);
    expect(compareMethods(methods, { ...settings, subsets: ["all"] }).tables).toEqual(summary?.tables);
  });
});
