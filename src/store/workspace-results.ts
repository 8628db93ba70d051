/**
 * The result tables of a workspace — `metrics` (SQL: src/store/runs.ts) and `predictions` (SQL:
 * src/store/predictions.ts): every step's and epoch's metric rows of a run's stage, and the evaluation's
 * per-question predictions, their retriever ids (a selector's checkpoint path) stored workspace-relative
 * and failures with URL passwords redacted.
 */
import { redactUrlPasswords } from "../util/redact.js";
import { fromStored, toStored } from "./files.js";
import * as predictions from "./predictions.js";
import * as runs from "./runs.js";
import type { MetricRecord, MetricRow, PredictionFilter, PredictionRow } from "./types.js";
import { DatasetTables } from "./workspace-datasets.js";

/** A workspace's metric rows and predictions. */
export abstract class ResultTables extends DatasetTables {
  logMetrics(rows: readonly MetricRow[]): void {
    runs.logMetrics(this.db, rows);
  }

  /** Deletes a stage's metric rows of `epoch` and later (a resumed run logs them again); returns the count. */
  dropMetricsFrom(runId: string, stage: string, epoch: number): number {
    return runs.dropMetricsFrom(this.db, runId, stage, epoch);
  }

  getMetrics(runId: string, filter: { stage?: string; name?: string } = {}): MetricRecord[] {
    return runs.getMetrics(this.db, runId, filter);
  }

  putPredictions(rows: readonly PredictionRow[]): void {
    predictions.putPredictions(
      this.db,
      rows.map((row) => ({
        ...row,
        retriever: toStored(this.dir, row.retriever),
        failure: row.failure === null ? null : redactUrlPasswords(row.failure),
      })),
    );
  }

  getPredictions(runId: string, filter: PredictionFilter = {}): PredictionRow[] {
    const stored =
      filter.retriever === undefined ? filter : { ...filter, retriever: toStored(this.dir, filter.retriever) };
    return predictions
      .getPredictions(this.db, runId, stored)
      .map((row) => ({ ...row, retriever: fromStored(this.dir, row.retriever) }));
  }

  hasPrediction(runId: string, retriever: string, shot: number, questionId: string): boolean {
    return predictions.hasPrediction(this.db, runId, toStored(this.dir, retriever), shot, questionId);
  }

  predictedQuestionIds(runId: string, retriever: string, shot: number): Set<string> {
    return predictions.predictedQuestionIds(this.db, runId, toStored(this.dir, retriever), shot);
  }
}
