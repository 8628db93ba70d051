import { existsSync, mkdirSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import type { VqaItem } from "../data/item.js";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import * as datasets from "./datasets.js";
import { hashData, hashFileSync, portablePath, resolveInside } from "./files.js";
import { migrate } from "./migrations.js";
import * as predictions from "./predictions.js";
import * as runs from "./runs.js";
import * as stageItems from "./stage-items.js";
import type {
  ArtifactRef,
  DatasetInput,
  DatasetRecord,
  EmbeddingRecord,
  MetricRecord,
  MetricRow,
  PredictionFilter,
  PredictionRow,
  RunInput,
  RunRecord,
  RunStatus,
  StageItemRow,
  StageRecord,
} from "./types.js";

export type * from "./types.js";

export const DB_FILE = "lever.db";
export const ARTIFACTS_DIR = "artifacts";

/**
 * A lever workspace: `lever.db` (SQLite, WAL, foreign keys on) plus an `artifacts/` folder.
 * Every write is one transaction; artefact files are written atomically before any record
 * points at them. Opening migrates the schema; a newer schema is refused.
 */
export class Workspace {
  readonly dir: string;
  readonly db: BetterSqlite3.Database;
  readonly artifactsDir: string;

  private constructor(dir: string, db: BetterSqlite3.Database) {
    this.dir = dir;
    this.db = db;
    this.artifactsDir = join(dir, ARTIFACTS_DIR);
  }

  /** Whether `dir` already holds a workspace database. */
  static exists(dir: string): boolean {
    return existsSync(join(resolve(dir), DB_FILE));
  }

  /** Opens (and by default creates) the workspace in `dir`, applying pending migrations. */
  static open(dir: string, options: { create?: boolean } = {}): Workspace {
    const root = resolve(dir);
    const dbPath = join(root, DB_FILE);
    const create = options.create ?? true;
    if (!existsSync(dbPath)) {
      if (!create) {
        throw new LeverError("no lever workspace here (import a dataset to create one, or pass --workspace)", {
          file: dbPath,
        });
      }
      if (existsSync(root) && !statSync(root).isDirectory()) {
        throw new LeverError("workspace path exists and is not a directory", { file: root });
      }
      mkdirSync(root, { recursive: true });
    }
    let db: BetterSqlite3.Database;
    try {
      db = new BetterSqlite3(dbPath);
    } catch (error) {
      throw new LeverError(`cannot open workspace database: ${(error as Error).message}`, { file: dbPath });
    }
    try {
      migrate(db, dbPath); // before any pragma that writes, so a too-new database is left untouched
      db.pragma("journal_mode = WAL");
      db.pragma("foreign_keys = ON");
      db.pragma("busy_timeout = 10000");
      db.pragma("cache_size = -65536"); // 64 MiB page cache: a VQAv2 import touches ~300 MB of pages
    } catch (error) {
      db.close();
      if (error instanceof LeverError) throw error;
      throw new LeverError(`not a usable lever workspace database: ${(error as Error).message}`, { file: dbPath });
    }
    mkdirSync(join(root, ARTIFACTS_DIR), { recursive: true });
    return new Workspace(root, db);
  }

  /** Runs `fn` in one SQLite transaction (nested calls become savepoints). `fn` must be synchronous. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // ── artefact files ────────────────────────────────────────────────────────────────────────

  /** Absolute path of `relative` under artifacts/; refuses paths that would leave it. */
  artifactPath(relative: string): string {
    return resolveInside(this.artifactsDir, relative);
  }

  /** Writes an artefact atomically (temp + fsync + rename). Returns its stored (relative) path and sha256. */
  writeArtifact(relative: string, data: string | Uint8Array | Uint8Array[]): ArtifactRef {
    const full = this.artifactPath(relative);
    writeFileAtomic(full, data);
    return { path: portablePath(this.artifactsDir, full), sha256: hashData(data) };
  }

  /** Absolute path of a stored artefact path (relative to artifacts/, or already absolute). */
  resolveArtifact(stored: string): string {
    return isAbsolute(stored) ? stored : this.artifactPath(stored);
  }

  // ── datasets, items, embeddings ────────────────────────────────────────────────────────────

  /** Stores a dataset and its items in one transaction; an existing name is refused unless `replace`. */
  putDataset(record: DatasetInput, items: readonly VqaItem[], options: { replace?: boolean } = {}): DatasetRecord {
    return datasets.putDataset(this.db, record, items, options);
  }

  getDataset(name: string): DatasetRecord | undefined {
    return datasets.getDataset(this.db, name);
  }

  /** Like getDataset but throws a LeverError naming the missing dataset. */
  requireDataset(name: string): DatasetRecord {
    return datasets.requireDataset(this.db, name);
  }

  listDatasets(): DatasetRecord[] {
    return datasets.listDatasets(this.db);
  }

  /** All items of a dataset ordered by question id (compareQuestionIds). */
  loadItems(name: string): VqaItem[] {
    return datasets.loadItems(this.db, name);
  }

  deleteDataset(name: string): boolean {
    return datasets.deleteDataset(this.db, name);
  }

  putEmbedding(e: EmbeddingRecord): EmbeddingRecord {
    return datasets.putEmbedding(this.db, e);
  }

  getEmbedding(dataset: string, kind: string): EmbeddingRecord | undefined {
    return datasets.getEmbedding(this.db, dataset, kind);
  }

  listEmbeddings(dataset?: string): EmbeddingRecord[] {
    return datasets.listEmbeddings(this.db, dataset);
  }

  // ── runs and stages ───────────────────────────────────────────────────────────────────────

  /** Creates a run (status "running") storing the resolved config and its hash; returns its id. */
  createRun(input: RunInput): string {
    return runs.createRun(this.db, input);
  }

  getRun(id: string): RunRecord | undefined {
    return runs.getRun(this.db, id);
  }

  listRuns(filter: { kind?: string; configHash?: string; status?: RunStatus } = {}): RunRecord[] {
    return runs.listRuns(this.db, filter);
  }

  finishRun(id: string, status: "done" | "failed", error?: string): void {
    runs.finishRun(this.db, id, status, error);
  }

  beginStage(runId: string, name: string, options: { restart?: boolean } = {}): void {
    runs.beginStage(this.db, runId, name, options);
  }

  updateStageProgress(runId: string, name: string, done: number, total: number): void {
    runs.updateStageProgress(this.db, runId, name, done, total);
  }

  /**
   * Marks a stage done. Each artefact is re-hashed from disk first: a missing or different file
   * (e.g. a crash mid-write) leaves the stage not done, so a re-run redoes it.
   */
  completeStage(runId: string, name: string, artifacts: ArtifactRef[]): void {
    const stored = artifacts.map((a) => {
      const full = this.resolveArtifact(a.path);
      let actual: string;
      try {
        actual = hashFileSync(full).sha256;
      } catch (error) {
        throw new LeverError(`artefact is missing: ${(error as Error).message}`, { file: full, record: runId });
      }
      if (actual !== a.sha256) {
        throw new LeverError(`artefact sha256 is ${actual}, expected ${a.sha256}`, { file: full, record: runId });
      }
      return { path: portablePath(this.artifactsDir, full), sha256: a.sha256 };
    });
    runs.completeStage(this.db, runId, name, stored);
  }

  failStage(runId: string, name: string, error: string): void {
    runs.failStage(this.db, runId, name, error);
  }

  getStage(runId: string, name: string): StageRecord | undefined {
    return runs.getStage(this.db, runId, name);
  }

  listStages(runId: string): StageRecord[] {
    return runs.listStages(this.db, runId);
  }

  /**
   * The resumable-stage pattern in one place: skip a stage that is done (returning its recorded
   * artefacts), otherwise begin it, produce its artefacts and complete it; a throw marks it failed.
   */
  async runStage(
    runId: string,
    name: string,
    produce: () => ArtifactRef[] | Promise<ArtifactRef[]>,
  ): Promise<{ skipped: boolean; artifacts: ArtifactRef[] }> {
    const existing = this.getStage(runId, name);
    if (existing?.status === "done") return { skipped: true, artifacts: existing.artifacts };
    this.beginStage(runId, name);
    try {
      const artifacts = await produce();
      this.completeStage(runId, name, artifacts);
      return { skipped: false, artifacts };
    } catch (error) {
      this.failStage(runId, name, error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  /** Stores finished (or failed) items of a resumable stage; a row with the same key replaces the old one. */
  putStageItems(rows: readonly StageItemRow[]): void {
    stageItems.putStageItems(this.db, rows);
  }

  /** The stored items of a run's stage, in key (question-id) order. */
  getStageItems(runId: string, stage: string): StageItemRow[] {
    return stageItems.getStageItems(this.db, runId, stage);
  }

  // ── metrics and predictions ───────────────────────────────────────────────────────────────

  logMetrics(rows: readonly MetricRow[]): void {
    runs.logMetrics(this.db, rows);
  }

  getMetrics(runId: string, filter: { stage?: string; name?: string } = {}): MetricRecord[] {
    return runs.getMetrics(this.db, runId, filter);
  }

  putPredictions(rows: readonly PredictionRow[]): void {
    predictions.putPredictions(this.db, rows);
  }

  getPredictions(runId: string, filter: PredictionFilter = {}): PredictionRow[] {
    return predictions.getPredictions(this.db, runId, filter);
  }

  hasPrediction(runId: string, retriever: string, shot: number, questionId: string): boolean {
    return predictions.hasPrediction(this.db, runId, retriever, shot, questionId);
  }

  predictedQuestionIds(runId: string, retriever: string, shot: number): Set<string> {
    return predictions.predictedQuestionIds(this.db, runId, retriever, shot);
  }
}
