import { describe, expect, it } from "vitest";
import { DEFAULT_TASK, getTask, TASK_NAMES } from "../../src/task/registry.js";
import { VQA_TASK } from "../../src/task/vqa.js";
import { LeverError } from "../../src/util/errors.js";

describe("the task registry", () => {
  it("finds each task by the name it records", () => {
    expect(getTask("vqa")).toBe(VQA_TASK);
    for (const name of TASK_NAMES) expect(getTask(name).name).toBe(name);
    expect(DEFAULT_TASK).toBe("vqa");
  });

  it("refuses an unknown task in one line naming the known ones and the field", () => {
    expect(() => getTask("translation", "--task")).toThrow(LeverError);
    expect(() => getTask("translation", "--task")).toThrow(/field "--task": unknown task "translation" \(known: vqa/);
    expect(() => getTask("toString")).toThrow(/unknown task "toString"/);
  });
});
