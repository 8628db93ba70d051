/**
 * An evaluation's results as TensorBoard scalars beside the training curves (src/store/tensorboard.ts):
 * per method of `lever eval`'s summary, `eval/<method>/accuracy` and, against the baseline,
 * `eval/<method>/delta` (points), each at step = shot, in `<workspace>/tensorboard/<eval run>/`, in one
 * file (`EVAL_EVENTS_FILE`) that each `lever eval` of the run rewrites whole with the run's current summary,
 * so a rerun that found everything stored leaves the same single file (and a moved workspace the same files).
 */
import type { ComparisonResult } from "../metrics/compare.js";
import { EventFileWriter, type Scalar, tensorboardDirOf } from "../store/tensorboard.js";

/** The summary's table of every question as scalars (methods by label, steps by shot). */
export function evaluationScalars(summary: ComparisonResult): Scalar[] {
  const table = summary.tables.find((t) => t.subset === "all") ?? summary.tables.at(-1);
  if (table === undefined) return [];
  const labels = new Map(summary.rows.map((r) => [r.id, r.label]));
  return table.rows.flatMap((row) =>
    row.cells.flatMap((cell): Scalar[] => {
      if (cell === null || cell.accuracy === null) return [];
      const tag = `eval/${labels.get(row.row) ?? row.row}`;
      return [
        { tag: `${tag}/accuracy`, step: cell.shot, value: cell.accuracy },
        ...(cell.comparison === null
          ? []
          : [{ tag: `${tag}/delta`, step: cell.shot, value: cell.comparison.difference }]),
      ];
    }),
  );
}

/** The evaluation run's one event file (TensorBoard reads every file whose name holds "tfevents"). */
export const EVAL_EVENTS_FILE = "events.out.tfevents.lever-eval";

/** Writes the summary's scalars into the run's event directory. */
export function writeEvaluationEvents(workspaceDir: string, runId: string, summary: ComparisonResult | null): void {
  if (summary === null) return;
  const writer = new EventFileWriter(tensorboardDirOf(workspaceDir, runId), undefined, EVAL_EVENTS_FILE);
  try {
    writer.write(evaluationScalars(summary));
  } finally {
    writer.close();
  }
}
