/**
 * Which task a dataset holds. It is recorded in the dataset's `details.task`; a dataset without it
 * is VQA (`DEFAULT_TASK`). Importers write it for every other task (the importers live below the
 * task layer, so they write the name their task entry is registered under); the default is not written, so a VQA dataset's row — and every identity
 * derived from it — is the same as before tasks existed (bench/fingerprint.ts), and old workspaces
 * need no migration. A recorded name the registry does not know is an error naming the dataset.
 */
import type { DatasetRecord } from "../store/types.js";
import { DEFAULT_TASK, getTask } from "./registry.js";
import type { Task } from "./types.js";

/** The name of the task a dataset record holds. */
export function datasetTaskName(record: Pick<DatasetRecord, "details">): string {
  const recorded = record.details.task;
  return recorded === undefined ? DEFAULT_TASK : String(recorded);
}

/** The task a dataset record holds. */
export function datasetTask(record: Pick<DatasetRecord, "name" | "details">): Task<unknown> {
  return getTask(datasetTaskName(record), `dataset ${record.name}: details.task`);
}
