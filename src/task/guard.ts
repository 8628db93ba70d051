/**
 * Every stage reads its task from its datasets: `stageTask` takes the datasets a stage reads, keyed
 * by the role each plays (as the error names it: "index", "evaluation", "query"), and returns their one task, refusing with one line
 * (a LeverError, exit 2) when they hold different tasks — a VQA index with caption evaluation data —
 * or when the task does not implement the stage yet. It reads; it changes no stage identity.
 */
import type { DatasetRecord } from "../store/types.js";
import { LeverError } from "../util/errors.js";
import { datasetTask } from "./dataset-task.js";
import type { Task, TaskStage } from "./types.js";

export type StageDatasets = Record<string, Pick<DatasetRecord, "name" | "details">>;

export function stageTask(stage: TaskStage, byRole: StageDatasets): Task<unknown> {
  const datasets = Object.entries(byRole).map(([role, record]) => ({ role, record }));
  if (datasets.length === 0) throw new RangeError("stageTask needs at least one dataset");
  const first = datasets[0];
  const task = datasetTask(first.record);
  for (const other of datasets.slice(1)) {
    const t = datasetTask(other.record);
    if (t.name !== task.name) {
      throw new LeverError(
        `task mismatch: ${first.role} dataset "${first.record.name}" is ${task.name} but ${other.role} dataset "${other.record.name}" is ${t.name}`,
        { field: "dataset" },
      );
    }
  }
  if (!task.stages.includes(stage)) {
    throw new LeverError(
      `${first.role} dataset "${first.record.name}" is a ${task.name} dataset, and the ${stage} stage does not run ${task.name} yet (it runs: ${task.stages.join(", ") || "no stage"})`,
      { field: "dataset" },
    );
  }
  return task;
}
