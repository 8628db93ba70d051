import { describe, expect, it } from "vitest";
import { type ComparedRow, type CompareSettings, compareMethods, type MethodInput } from "../../src/metrics/compare.js";
import { renderComparison } from "../../src/report/compare-render.js";
import { LeverError } from "../../src/util/errors.js";

/** Rows of one method at one shot: question ids "1", "2", … with the given accuracies (null = failed call). */
function rows(shot: number, accuracies: (number | null)[], demos?: (i: number) => string[]): ComparedRow[] {
  return accuracies.map((accuracy, i) => ({
    shot,
    questionId: String(i + 1),
    accuracy,
    failure: accuracy === null ? "HTTP 500" : null,
    demonstrations: demos ? demos(i) : Array.from({ length: shot }, (_, k) => `d${i}-${k}`),
  }));
}

const method = (id: string, r: ComparedRow[], group?: string): MethodInput => ({ id, label: id, rows: r, group });

const settings = (over: Partial<CompareSettings> = {}): CompareSettings => ({
  baseline: "b",
  subsets: ["all"],
  seed: 1,
  resamples: 500,
  test: "mcnemar",
  ...over,
});

// b: 4 of 10 right. a: right on 1–6, 0.6 on 8, failed on 10.
const B = [1, 1, 1, 0, 0, 0, 1, 0, 0, 0];
const A = [1, 1, 1, 1, 1, 1, 0, 0.6, 0, null];

describe("compareMethods", () => {
  it("pairs on questions both scored, excludes and counts failures, McNemar on acc = 1", () => {
    const result = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings());
    expect(result.rows.map((r) => [r.id, r.isBaseline])).toEqual([
      ["b", true],
      ["a", false],
    ]);
    const [base, a] = result.tables[0].rows.map((r) => r.cells[0]!);
    expect(base).toMatchObject({ n: 10, failures: 0, comparison: null });
    expect(base.accuracy).toBeCloseTo(40, 12);
    expect(a).toMatchObject({ n: 9, failures: 1 });
    expect(a.accuracy).toBeCloseTo((100 * 6.6) / 9, 12);
    const c = a.comparison!;
    // Pairs 1–9: a sums to 6.6, b to 4 → Δ = 2.6/9. McNemar on acc = 1: only a on 4, 5, 6; only b on 7
    // (0.6 on question 8 is not "right"): p = 2·(1 + 4)/16 = 0.625.
    expect(c).toMatchObject({ pairs: 9, excluded: 1, test: "mcnemar", mcnemar: { onlyRow: 3, onlyBaseline: 1 } });
    expect(c.difference).toBeCloseTo((100 * 2.6) / 9, 12);
    expect(c.pValue).toBeCloseTo(0.625, 15);
    expect(c.pHolm).toBeCloseTo(0.625, 15); // a family of one
    expect(c.significant).toBe(false);
    expect(c.ci.lower).toBeLessThan(c.difference);
    expect(c.ci.upper).toBeGreaterThan(c.difference);
    // MDE = 2.8016 · sd(d)/√9 with d = a − b on the pairs.
    const d = A.slice(0, 9).map((v, i) => (v as number) - B[i]);
    const mean = d.reduce((s, v) => s + v, 0) / 9;
    const sd = Math.sqrt(d.reduce((s, v) => s + (v - mean) ** 2, 0) / 8);
    expect(c.mde).toBeCloseTo((100 * 2.8015852181129683 * sd) / 3, 9);
    expect(result.tables[0].mde).toEqual({ lower: c.mde, upper: c.mde });
  });

  it("adjusts p over all comparisons of a table with Holm and marks significance after it", () => {
    // b is right on question 4 only. c is right on 1–30: 29 wins, no loss → McNemar p = 2·2^-29 = 2^-28.
    // a is right on 1–3: 3 wins, 1 loss → p = 2·(1 + 4)/16 = 0.625.
    const b40 = Array.from({ length: 40 }, (_, i) => (i === 3 ? 1 : 0));
    const c40 = Array.from({ length: 40 }, (_, i) => (i < 30 ? 1 : 0));
    const a40 = Array.from({ length: 40 }, (_, i) => (i < 3 ? 1 : 0));
    const result = compareMethods(
      [method("b", rows(1, b40)), method("a", rows(1, a40)), method("c", rows(1, c40))],
      settings(),
    );
    const table = result.tables[0];
    expect(table.comparisons).toBe(2);
    const a = table.rows[1].cells[0]!.comparison!;
    const c = table.rows[2].cells[0]!.comparison!;
    expect(c.mcnemar).toEqual({ onlyRow: 29, onlyBaseline: 0 });
    expect(c.pValue / 2 ** -28).toBeCloseTo(1, 12);
    // Holm, m = 2: the smaller p doubles; the larger stays (its multiplier is 1) → 0.625.
    expect(c.pHolm! / 2 ** -27).toBeCloseTo(1, 12);
    expect(a.pValue).toBeCloseTo(0.625, 15);
    expect(a.pHolm).toBeCloseTo(0.625, 15);
    expect([a.significant, c.significant]).toEqual([false, true]);
    const text = renderComparison(result, "table");
    expect(text).toMatch(/\nc\s+1\s+40\s+0\s+\+72\.50\s+\[[^\]]+\]\s+29\/0\s+<0\.0001\s+<0\.0001\s+\*\s+\d/);
    expect(text).toMatch(/\na\s+1\s+40\s+0\s+\+5\.00\s+\[[^\]]+\]\s+3\/1\s+0\.6250\s+0\.6250\s+ns/);
  });

  it("references (the simulator's oracle and informed ceiling) are compared but stay out of the Holm family", () => {
    const b40 = Array.from({ length: 40 }, (_, i) => (i === 3 ? 1 : 0));
    const a40 = Array.from({ length: 40 }, (_, i) => (i < 3 ? 1 : 0));
    const o40 = Array.from({ length: 40 }, (_, i) => (i < 30 ? 1 : 0));
    const result = compareMethods(
      [method("b", rows(1, b40)), method("a", rows(1, a40)), { ...method("oracle", rows(1, o40)), reference: true }],
      settings(),
    );
    const table = result.tables[0];
    expect(table.comparisons).toBe(1);
    const a = table.rows[1].cells[0]!.comparison!;
    const o = table.rows[2].cells[0]!.comparison!;
    // a alone in the family: its Holm p is its p (with the reference inside it would have been 2p … capped).
    expect(a.pHolm).toBe(a.pValue);
    expect(o).toMatchObject({ reference: true, pHolm: null, significant: false });
    expect(o.pValue / 2 ** -28).toBeCloseTo(1, 12);
    const text = renderComparison(result, "table");
    expect(text).toMatch(/\noracle\s+1\s+40\s+0\s+\+72\.50\s+\[[^\]]+\]\s+29\/0\s+<0\.0001\s+—\s+ref\s/);
    expect(renderComparison(result, "csv")).toMatch(/oracle,.*,true,/);
  });

  it("builds one table per subset of the first N questions in question-id order, skipping subsets too large", () => {
    const result = compareMethods(
      [method("b", rows(1, B)), method("a", rows(1, A))],
      settings({ subsets: [5, "all", 20] }),
    );
    expect(result.tables.map((t) => [t.label, t.questions])).toEqual([
      ["first 5", 5],
      ["all", 10],
    ]);
    expect(result.notes).toContain('subset "first 20" skipped: only 10 questions were evaluated');
    // First 5: a = 1,1,1,1,1; b = 1,1,1,0,0 → Δ 40 points, McNemar 2/0 → p = 0.5.
    const c = result.tables[0].rows[1].cells[0]!.comparison!;
    expect(c.difference).toBeCloseTo(40, 12);
    expect(c.mcnemar).toEqual({ onlyRow: 2, onlyBaseline: 0 });
    expect(c.pValue).toBeCloseTo(0.5, 15);
    // A first-N of every evaluated question is "all", not "first 10", and not repeated; ids sort numerically ("10" after "9").
    const same = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings({ subsets: [10, "all"] }));
    expect(same.tables.map((t) => t.label)).toEqual(["all"]);
    const only = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings({ subsets: [10] }));
    expect(only.tables.map((t) => [t.label, t.subset])).toEqual([["all", "all"]]);
    // … and a table of every question draws as "all" whatever it is called: the same intervals as "all" alone.
    const all = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings({ subsets: ["all"] }));
    expect(same.tables[0].rows).toEqual(all.tables[0].rows);
  });

  it("aggregates seeds as mean ± sd with the per-seed values, and tests the seed mean with sign flips", () => {
    // Seeds right on 2, 1, 3 of 4 questions → 50, 25, 75: mean 50, sd 25. Baseline all wrong.
    const result = compareMethods(
      [
        method("b", rows(1, [0, 0, 0, 0])),
        method("s1", rows(1, [1, 1, 0, 0]), "g"),
        method("s2", rows(1, [1, 0, 0, 0]), "g"),
        method("s3", rows(1, [1, 1, 1, 0]), "g"),
      ],
      settings({ baseline: "b" }),
    );
    expect(result.rows[1]).toMatchObject({
      id: "g",
      isGroup: true,
      members: [{ id: "s1" }, { id: "s2" }, { id: "s3" }],
    });
    const cell = result.tables[0].rows[1].cells[0]!;
    expect(cell.seeds!.values).toEqual([50, 25, 75]);
    expect(cell.seeds!.mean).toBeCloseTo(50, 12);
    expect(cell.seeds!.sd).toBeCloseTo(25, 12);
    expect(cell.accuracy).toBeCloseTo(50, 12); // per-question means 1, 2/3, 1/3, 0
    const c = cell.comparison!;
    expect(c.seeds!.values).toEqual([50, 25, 75]);
    expect(c.seeds!.sd).toBeCloseTo(25, 12);
    expect(c.difference).toBeCloseTo(50, 12);
    // Sign flips of d = (1, 2/3, 1/3, 0), enumerated exactly: only ±(+,+,+,·) reach |Σ| = 2 → 4/16.
    expect(c).toMatchObject({ test: "sign-flip", mcnemar: null });
    expect(c.pValue).toBeCloseTo(0.25, 15);
  });

  it("counts a question a seed did not score as a failure of the group", () => {
    const result = compareMethods(
      [
        method("b", rows(1, [0, 0, 0])),
        method("s1", rows(1, [1, 1, 1]), "g"),
        method("s2", rows(1, [1, null, 1]), "g"),
      ],
      settings(),
    );
    const cell = result.tables[0].rows[1].cells[0]!;
    expect(cell).toMatchObject({ n: 2, failures: 1 });
    expect(cell.comparison).toMatchObject({ pairs: 2, excluded: 1 });
  });

  it("computes selection overlap between every two methods per shot (identical ids in prompt order)", () => {
    const demos = (i: number) => [`x${i}`, `y${i}`];
    const other = (i: number) => (i === 0 ? ["y0", "x0"] : [`x${i}`, `y${i}`]);
    const result = compareMethods(
      [
        method("b", rows(2, [0, 0, 0, 0], demos)),
        method("a", rows(2, [1, 1, 1, 1], other)),
        method("zero", rows(0, [0])),
      ],
      settings(),
    );
    expect(result.overlap).toEqual([{ shot: 2, a: "b", b: "a", n: 4, identical: 3, sameSet: 4, share: 0.75 }]);
    expect(result.notes).toContain("zero at shot 0 is not compared: the baseline has no predictions at that shot");
    expect(renderComparison(result, "table")).toMatch(/b vs a\s+75\.0% \(3\/4\)/);
  });

  it("resamples whole images when clusters are given", () => {
    const clusters = new Map(B.map((_, i) => [String(i + 1), "one-image"]));
    const result = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings({ clusters }));
    const c = result.tables[0].rows[1].cells[0]!.comparison!;
    // A single image: every resample is the whole sample, and the cluster-robust SE is 0.
    expect(c.ci.lower).toBeCloseTo(c.difference, 12);
    expect(c.ci.upper).toBeCloseTo(c.difference, 12);
    expect(c.mde).toBe(0);
    expect(result.settings.clustered).toBe(true);
  });

  it("gives a row the same numbers whatever else is compared (per-cell seeds)", () => {
    const two = compareMethods([method("b", rows(1, B)), method("a", rows(1, A))], settings());
    const three = compareMethods(
      [method("b", rows(1, B)), method("c", rows(1, [...A].reverse())), method("a", rows(1, A))],
      settings(),
    );
    expect(three.tables[0].rows[2].cells[0]!.comparison!.ci).toEqual(two.tables[0].rows[1].cells[0]!.comparison!.ci);
  });

  it("gives a row the same numbers in another workspace: streams follow the label, not the checkpoint path in the id", () => {
    const at = (path: string) =>
      compareMethods(
        [
          method("b", rows(1, B)),
          { id: `eval-0007/selector:${path}/online.safetensors`, label: "selector:online", rows: rows(1, A) },
        ],
        settings(),
      ).tables[0].rows[1].cells[0]!;
    const [here, there] = [at("/ws1/experiments/demo"), at("/tmp/other/experiments/demo")];
    expect(there.ci).toEqual(here.ci);
    expect(there.comparison!.ci).toEqual(here.comparison!.ci);
  });

  it("refuses an unknown baseline, a baseline inside a seed group, and duplicate questions", () => {
    expect(() => compareMethods([method("a", rows(1, A))], settings({ baseline: "nope" }))).toThrow(
      /no method "nope" to use as the baseline \(known: a\)/,
    );
    expect(() =>
      compareMethods([method("a", rows(1, A), "g"), method("b2", rows(1, B), "g")], settings({ baseline: "a" })),
    ).toThrow(/belongs to seed group "g"/);
    expect(() => compareMethods([method("b", [...rows(1, B), ...rows(1, B)])], settings())).toThrow(LeverError);
  });
});

describe("renderComparison", () => {
  const result = compareMethods([method("b", rows(1, B)), method("a", rows(1, A)), method("b|x", rows(1, B))], {
    ...settings(),
    subsets: [5, "all"],
  });

  it("terminal table: accuracy by shot with failures shown, then the comparisons and the MDE line", () => {
    const text = renderComparison(result, "table");
    expect(text).toContain("exact McNemar on per-question correctness (acc = 1");
    expect(text).toMatch(/== first 5 questions \(5, question-id order\) ==/);
    expect(text).toMatch(/\nb \(baseline\)\s+40\.00 \[/);
    expect(text).toMatch(/\na\s+73\.33 \[[^\]]+\] \(1 failed\)/);
    expect(text).toMatch(/2 comparisons in the Holm family; MDE \d+\.\d\d–\d+\.\d\d points/);
  });

  it("Markdown escapes pipes; CSV has one line per subset × row × shot; JSON round-trips", () => {
    const md = renderComparison(result, "markdown");
    expect(md).toContain("| b\\|x |");
    expect(md).toMatch(/\| --- \| ---: \|/);
    const csv = renderComparison(result, "csv").split("\n");
    expect(csv).toHaveLength(1 + 2 * 3);
    expect(csv[0]).toMatch(/^subset,questions,row,label,seeds,shot,n,failures,accuracy,/);
    const aAll = csv.find((l) => l.startsWith("all,10,a,a,"))!.split(",");
    expect(aAll[6]).toBe("9"); // n
    expect(aAll[7]).toBe("1"); // failures
    expect(aAll[8]).toBe("73.333333");
    expect(aAll[20]).toBe("3"); // only_row
    expect(JSON.parse(renderComparison(result, "json"))).toEqual(JSON.parse(JSON.stringify(result)));
  });
});
