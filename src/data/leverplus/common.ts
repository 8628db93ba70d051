/** The idx ⇄ question-id mapping shared by the Lever-Plus importers and exporters (docs/provenance.md#rows). */
import { LeverError } from "../../util/errors.js";
import { compareQuestionIds } from "../item.js";

/** The row ⇄ question-id mapping of one dataset (rows in question-id order, as Python sorts them). */
export interface DatasetIndex {
  name: string;
  ids: readonly string[];
  rowOf: ReadonlyMap<string, number>;
  /** Image id per row, when known (for the same-image pool rule). */
  imageIds?: readonly string[];
}

/** Builds the mapping; `items` must be in question-id order (Workspace.loadItems returns them so). */
export function datasetIndex(name: string, items: readonly { questionId: string; imageId?: string }[]): DatasetIndex {
  for (let i = 1; i < items.length; i++) {
    if (compareQuestionIds(items[i - 1].questionId, items[i].questionId) >= 0)
      throw new LeverError(
        `items must be in strictly increasing question-id order; "${items[i - 1].questionId}" comes before "${items[i].questionId}" at row ${i}`,
        { record: name },
      );
  }
  const ids = items.map((item) => item.questionId);
  const imageIds = items.every((item) => item.imageId !== undefined) ? items.map((item) => item.imageId!) : undefined;
  return { name, ids, rowOf: new Map(ids.map((id, row) => [id, row])), imageIds };
}

/** Where a value sits, for error messages. */
export interface Where {
  file: string;
  record: string;
  field: string;
}

/** The question id of Python row `idx`, or a LeverError naming where the bad idx was found. */
export function idOfRow(index: DatasetIndex, idx: number, where: Where): string {
  if (!Number.isInteger(idx) || idx < 0 || idx >= index.ids.length)
    throw new LeverError(`${idx} is outside dataset "${index.name}" (rows 0..${index.ids.length - 1})`, where);
  return index.ids[idx];
}

/** The Python row of a question id (for export). */
export function rowOfId(index: DatasetIndex, id: string, where: Where): number {
  const row = index.rowOf.get(id);
  if (row === undefined) throw new LeverError(`question id "${id}" is not in dataset "${index.name}"`, where);
  return row;
}

/** A top-level key of a Lever-Plus file: a decimal row number. */
export function parseRowKey(key: string, file: string): number {
  if (!/^(0|[1-9]\d*)$/.test(key))
    throw new LeverError("top-level keys must be row numbers (idx) of the dataset", { file, record: key });
  return Number(key);
}

/** The duplicate in a list, if any: [firstIndex, secondIndex]. */
export function findDuplicate<T>(values: readonly T[]): [number, number] | undefined {
  const seen = new Map<T, number>();
  for (let i = 0; i < values.length; i++) {
    const first = seen.get(values[i]);
    if (first !== undefined) return [first, i];
    seen.set(values[i], i);
  }
  return undefined;
}
