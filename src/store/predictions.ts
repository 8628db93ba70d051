import type { Database } from "better-sqlite3";
import { compareQuestionIds } from "../data/item.js";
import { MAX_ITEM_SCORE } from "../data/trajectories.js";
import { check } from "../util/errors.js";
import type { PredictionFilter, PredictionRow } from "./types.js";

interface PredictionDbRow {
  run: string;
  retriever: string;
  shot: number;
  question_id: string;
  demonstrations: string;
  prompt_hash: string;
  raw_answer: string | null;
  answer: string | null;
  accuracy: number | null;
  failure: string | null;
}

/**
 * Stores per-question predictions in one transaction. A row with the same
 * (run, retriever, shot, question) key replaces the old one, so a resumed evaluation can
 * re-write a question it had started without duplicating it.
 */
export function putPredictions(db: Database, rows: readonly PredictionRow[]): void {
  const insert = db.prepare(
    `INSERT OR REPLACE INTO predictions
       (run, retriever, shot, question_id, demonstrations, prompt_hash, raw_answer, answer, accuracy, failure, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const now = new Date().toISOString();
  db.transaction(() => {
    for (const row of rows) {
      check(Number.isInteger(row.shot) && row.shot >= 0, `shot must be a non-negative integer, got ${row.shot}`, {
        record: row.questionId,
        field: "shot",
      });
      // The task's per-item score: VQA accuracy in [0, 1], caption CIDEr-D in [0, 10].
      check(
        row.accuracy === null || (row.accuracy >= 0 && row.accuracy <= MAX_ITEM_SCORE),
        `accuracy must be in [0, ${MAX_ITEM_SCORE}], got ${row.accuracy}`,
        { record: row.questionId, field: "accuracy" },
      );
      insert.run(
        row.runId,
        row.retriever,
        row.shot,
        row.questionId,
        JSON.stringify(row.demonstrations),
        row.promptHash,
        row.rawAnswer,
        row.answer,
        row.accuracy,
        row.failure,
        now,
      );
    }
  }).immediate();
}

/** Predictions of a run, ordered by retriever, shot and question id. */
export function getPredictions(db: Database, runId: string, filter: PredictionFilter = {}): PredictionRow[] {
  const rows = db
    .prepare(
      `SELECT * FROM predictions
       WHERE run = @run AND (@retriever IS NULL OR retriever = @retriever) AND (@shot IS NULL OR shot = @shot)`,
    )
    .all({ run: runId, retriever: filter.retriever ?? null, shot: filter.shot ?? null }) as PredictionDbRow[];
  const out = rows.map(
    (r): PredictionRow => ({
      runId: r.run,
      retriever: r.retriever,
      shot: r.shot,
      questionId: r.question_id,
      demonstrations: JSON.parse(r.demonstrations),
      promptHash: r.prompt_hash,
      rawAnswer: r.raw_answer,
      answer: r.answer,
      accuracy: r.accuracy,
      failure: r.failure,
    }),
  );
  return out.sort(
    (a, b) =>
      (a.retriever < b.retriever ? -1 : a.retriever > b.retriever ? 1 : 0) ||
      a.shot - b.shot ||
      compareQuestionIds(a.questionId, b.questionId),
  );
}

/**
 * Whether (run, retriever, shot, question) has a successful prediction. Failed VLM calls do not
 * count, so a resumed evaluation retries them.
 */
export function hasPrediction(
  db: Database,
  runId: string,
  retriever: string,
  shot: number,
  questionId: string,
): boolean {
  return (
    db
      .prepare(
        "SELECT 1 FROM predictions WHERE run = ? AND retriever = ? AND shot = ? AND question_id = ? AND failure IS NULL",
      )
      .get(runId, retriever, shot, questionId) !== undefined
  );
}

/** Question ids with a successful prediction for (run, retriever, shot): what a resumed evaluation skips. */
export function predictedQuestionIds(db: Database, runId: string, retriever: string, shot: number): Set<string> {
  const rows = db
    .prepare("SELECT question_id FROM predictions WHERE run = ? AND retriever = ? AND shot = ? AND failure IS NULL")
    .pluck()
    .all(runId, retriever, shot) as string[];
  return new Set(rows);
}
