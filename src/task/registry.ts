/**
 * THE list of tasks (src/task/types.ts): one entry per task, keyed by the name a dataset records.
 * Adding a task is an entry here plus its module (docs/architecture.md, "How to add a task").
 * A dataset that records no task is VQA (`DEFAULT_TASK`): workspaces made before tasks existed.
 */
import { LeverError } from "../util/errors.js";
import { CAPTION_TASK } from "./caption.js";
import type { Task } from "./types.js";
import { VQA_TASK } from "./vqa.js";

const TASKS: Record<string, Task<unknown>> = {
  vqa: VQA_TASK,
  caption: CAPTION_TASK,
};

export const TASK_NAMES = Object.keys(TASKS) as [string, ...string[]];
export const DEFAULT_TASK = "vqa";

/** The task named `name`; a LeverError naming the known tasks otherwise. */

export function getTask(name: string, field = "task"): Task<unknown> {
  const task = Object.hasOwn(TASKS, name) ? TASKS[name] : undefined;
  if (task === undefined) throw new LeverError(`unknown task "${name}" (known: ${TASK_NAMES.join(", ")})`, { field });
  return task;
}
