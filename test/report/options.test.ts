import { describe, expect, it } from "vitest";
import { CompareSettingsSchema, ReportSettingsSchema } from "../../src/report/options.js";

describe("comparison settings", () => {
  it("read a seed group as NAME=METHOD+METHOD+… and hand it on as data", () => {
    const parsed = CompareSettingsSchema.parse({
      seedGroups: ["grpo=eval-0003/selector:grpo + eval-0004/selector:grpo"],
    });
    expect(parsed.seedGroups).toEqual([
      { name: "grpo", members: ["eval-0003/selector:grpo", "eval-0004/selector:grpo"] },
    ]);
    expect(ReportSettingsSchema.parse({}).seedGroups).toEqual([]);
    expect(CompareSettingsSchema.safeParse({ seedGroups: ["grpo=one"] }).success).toBe(false);
  });
});
