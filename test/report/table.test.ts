import { describe, expect, it } from "vitest";
import { formatInterval, formatNumber, formatPValue, renderTable } from "../../src/report/table.js";

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
