/**
 * Per-item results of resumable stages (`stage_items`): a stage stores each item (anchor, query) as
 * soon as it finishes, so a killed run resumes with the items it has. A done item is final; a
 * failed one keeps its reason and is retried by the next run. Values are JSON.
 */
import type { Database } from "better-sqlite3";
import { compareQuestionIds } from "../data/item.js";
import type { StageItemRow } from "./types.js";

interface StageItemDbRow {
  run: string;
  stage: string;
  key: string;
  status: "done" | "failed";
  value: string | null;
  error: string | null;
}

/** Inserts or replaces rows keyed by (run, stage, key), in one transaction. */
export function putStageItems(db: Database, rows: readonly StageItemRow[]): void {
  const insert = db.prepare(
    "INSERT OR REPLACE INTO stage_items (run, stage, key, status, value, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  const now = new Date().toISOString();
  db.transaction(() => {
    for (const row of rows)
      insert.run(
        row.runId,
        row.stage,
        row.key,
        row.status,
        row.status === "done" ? JSON.stringify(row.value) : null,
        row.status === "failed" ? row.error : null,
        now,
      );
  })();
}

/** Every stored item of a run's stage, in key order (question ids compare numerically when they are numbers). */
export function getStageItems(db: Database, runId: string, stage: string): StageItemRow[] {
  const rows = db
    .prepare("SELECT run, stage, key, status, value, error FROM stage_items WHERE run = ? AND stage = ?")
    .all(runId, stage) as StageItemDbRow[];
  return rows
    .sort((a, b) => compareQuestionIds(a.key, b.key))
    .map(
      (r): StageItemRow =>
        r.status === "done"
          ? { runId: r.run, stage: r.stage, key: r.key, status: "done", value: JSON.parse(r.value ?? "null") }
          : { runId: r.run, stage: r.stage, key: r.key, status: "failed", error: r.error ?? "" },
    );
}
