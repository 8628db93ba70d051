import { describe, expect, it } from "vitest";
import { datasetTask, datasetTaskName } from "../../src/task/dataset-task.js";
import { stageTask } from "../../src/task/guard.js";
import { TASK_STAGES } from "../../src/task/types.js";
import { LeverError } from "../../src/util/errors.js";

const vqa = (name: string) => ({ name, details: {} });

describe("a dataset's task", () => {
  it("is VQA when the dataset records none (workspaces made before tasks)", () => {
    expect(datasetTaskName({ details: {} })).toBe("vqa");
    expect(datasetTask(vqa("train")).name).toBe("vqa");
    expect(datasetTaskName({ details: { task: "vqa" } })).toBe("vqa");
  });

  it("refuses a recorded task the registry does not know, naming the dataset", () => {
    expect(() => datasetTask({ name: "odd", details: { task: "speech" } })).toThrow(
      /field "dataset odd: details.task": unknown task "speech"/,
    );
  });
});

describe("stageTask", () => {
  it("returns the datasets' one task", () => {
    const task = stageTask("eval", { evaluation: vqa("val"), index: vqa("train") });
    expect(task.name).toBe("vqa");
  });

  it("refuses a dataset of an unknown task among them, in one line", () => {
    const run = () =>
      stageTask("eval", { evaluation: vqa("val"), index: { name: "odd", details: { task: "speech" } } });
    expect(run).toThrow(LeverError);
    expect(run).toThrow(/^[^\n]*unknown task "speech"[^\n]*$/);
  });
});

describe("stageTask with a caption dataset", () => {
  const caption = (name: string) => ({ name, details: { task: "caption" } });

  it("refuses mixing tasks with one line naming both datasets, their roles and tasks", () => {
    const run = () => stageTask("eval", { evaluation: caption("cap-val"), index: vqa("vqa-train") });
    expect(run).toThrow(
      'field "dataset": task mismatch: evaluation dataset "cap-val" is caption but index dataset "vqa-train" is vqa',
    );
  });

  it("admits every stage of the chain, and reads in CIDEr", () => {
    for (const stage of TASK_STAGES) expect(stageTask(stage, { query: caption("c") }).name).toBe("caption");
    expect(stageTask("embed", { embedded: caption("c") }).wording.metric).toBe("CIDEr");
  });
});
