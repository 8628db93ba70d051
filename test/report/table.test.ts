import { describe, expect, it } from "vitest";
import type { EvalSummary } from "../../src/report/results.js";
import { formatInterval, formatNumber, formatPValue, renderEvalSummary, renderTable } from "../../src/report/table.js";

describe("renderTable", () => {
  it("pads every column to its widest cell, right-aligns numbers and trims trailing spaces", () => {
    const text = renderTable(
      [{ header: "name" }, { header: "acc", align: "right" }, { header: "note" }],
      [
        ["random", "45.20", ""],
        ["topk-image", "5.00", "±"],
      ],
    );
    expect(text).toBe(
      ["name          acc  note", "----------  -----  ----", "random      45.20", "topk-image   5.00  ±"].join("\n"),
    );
  });

  it("rejects a row with the wrong number of cells", () => {
    expect(() => renderTable([{ header: "a" }], [["1", "2"]])).toThrow(/row 0 has 2 cells/);
  });
});

describe("number formatting", () => {
  it("rounds to fixed digits, never prints -0.00, and signs on request", () => {
    expect(formatNumber(45.678, 2)).toBe("45.68");
    expect(formatNumber(-0.004, 2)).toBe("0.00");
    expect(formatNumber(-1.5, 1)).toBe("-1.5");
    expect(formatNumber(2, 1, true)).toBe("+2.0");
    expect(formatNumber(0, 1, true)).toBe("0.0");
    expect(formatNumber(Number.NaN, 1)).toBe("n/a");
    expect(formatInterval([-1.25, 3.5], 1, true)).toBe("[-1.3, +3.5]");
  });

  it("prints p-values with 4 decimals and a floor", () => {
    expect(formatPValue(0.25)).toBe("0.2500");
    expect(formatPValue(0.00001)).toBe("<0.0001");
    expect(formatPValue(Number.NaN)).toBe("n/a");
  });
});

describe("renderEvalSummary", () => {
  it("renders the accuracy table and the paired comparisons from a hand-made summary", () => {
    const summary: EvalSummary = {
      seed: 3,
      resamples: 1000,
      confidence: 0.95,
      clustered: false,
      baseline: "random",
      cells: [
        { retriever: "random", shot: 1, n: 50, failures: 0, accuracy: 44, ci: { lower: 36.2, upper: 51.8 } },
        { retriever: "topk-image", shot: 1, n: 48, failures: 2, accuracy: 52.125, ci: { lower: 44, upper: 60.5 } },
        { retriever: "oracle", shot: 1, n: 0, failures: 50, accuracy: null, ci: null },
      ],
      comparisons: [
        {
          retriever: "topk-image",
          shot: 1,
          baseline: "random",
          baselineShot: 1,
          n: 48,
          difference: 8.125,
          ci: { lower: -0.5, upper: 16.75 },
          pValue: 0.061,
          mcnemar: { onlyRetriever: 9, onlyBaseline: 3, pValue: 0.146 },
          significant: false,
        },
      ],
      notes: ["example note"],
    };
    expect(renderEvalSummary(summary)).toBe(
      [
        "VQA accuracy (official metric, %), 95% bootstrap CI over questions (1000 resamples, seed 3); failed VLM calls are excluded and counted.",
        "retriever   shot   n  failed  acc %          95% CI",
        "----------  ----  --  ------  -----  --------------",
        "random         1  50       0  44.00  [36.20, 51.80]",
        "topk-image     1  48       2  52.13  [44.00, 60.50]",
        "oracle         1   0      50    n/a             n/a",
        "",
        "Paired difference vs random on the same questions (points), 95% paired-bootstrap CI; McNemar on acc = 1 (only retriever / only baseline); * = CI excludes 0.",
        "retriever   shot        vs   n   diff           95% CI       p  McNemar  p(McN)  sig",
        "----------  ----  --------  --  -----  ---------------  ------  -------  ------  ---",
        "topk-image     1  random@1  48  +8.13  [-0.50, +16.75]  0.0610      9/3  0.1460",
        "note: example note",
      ].join("\n"),
    );
  });
});
