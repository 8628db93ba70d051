import type { Database } from "better-sqlite3";
import { LeverError } from "../util/errors.js";
import { storeWorkspaceRelative } from "./relocate.js";

/**
 * The workspace schema as an ordered list of versioned steps. A step is never edited once
 * released; changes are new steps appended at the end. Each step runs in its own transaction
 * together with its `schema_version` row, so a crash leaves the database at a whole version.
 */
export interface Migration {
  version: number;
  description: string;
  sql: string;
  /** A data step run after `sql`, in the same transaction, given the database file's path. */
  run?: (db: Database, file: string) => void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "datasets, items, embeddings, runs, stages, metrics, predictions, vlm_cache",
    sql: `
      CREATE TABLE datasets (
        name TEXT PRIMARY KEY,
        split TEXT NOT NULL,
        source TEXT NOT NULL,
        files TEXT NOT NULL,
        item_count INTEGER NOT NULL,
        items_hash TEXT NOT NULL,
        subset TEXT,
        images TEXT,
        details TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE items (
        dataset TEXT NOT NULL REFERENCES datasets(name) ON DELETE CASCADE,
        question_id TEXT NOT NULL,
        image_id TEXT NOT NULL,
        question TEXT NOT NULL,
        answers TEXT NOT NULL,
        answer_confidences TEXT,
        raw_answers TEXT,
        answer TEXT NOT NULL,
        question_type TEXT NOT NULL,
        answer_type TEXT NOT NULL,
        image_path TEXT,
        PRIMARY KEY (dataset, question_id)
      );
      -- Entries of an index are ordered by (key, rowid): this one yields a dataset's items in
      -- insertion order (= question-id order) with no sort step.
      CREATE INDEX items_by_dataset ON items(dataset);
      CREATE TABLE embeddings (
        dataset TEXT NOT NULL REFERENCES datasets(name) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        rows INTEGER NOT NULL,
        dim INTEGER NOT NULL,
        dtype TEXT NOT NULL,
        ids_path TEXT,
        details TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (dataset, kind)
      );
      CREATE TABLE runs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        name TEXT,
        config TEXT NOT NULL,
        config_hash TEXT NOT NULL,
        seed INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        parent_run TEXT REFERENCES runs(id),
        created_at TEXT NOT NULL,
        finished_at TEXT,
        error TEXT
      );
      CREATE INDEX runs_by_kind_hash ON runs(kind, config_hash);
      CREATE TABLE stages (
        run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        progress_done INTEGER NOT NULL DEFAULT 0,
        progress_total INTEGER NOT NULL DEFAULT 0,
        artifacts TEXT NOT NULL DEFAULT '[]',
        started_at TEXT NOT NULL,
        finished_at TEXT,
        error TEXT,
        PRIMARY KEY (run, name)
      );
      CREATE TABLE metrics (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        stage TEXT NOT NULL,
        step INTEGER,
        epoch INTEGER,
        name TEXT NOT NULL,
        value REAL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX metrics_by_run ON metrics(run, stage, name);
      CREATE TABLE predictions (
        run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        retriever TEXT NOT NULL,
        shot INTEGER NOT NULL,
        question_id TEXT NOT NULL,
        demonstrations TEXT NOT NULL,
        prompt_hash TEXT NOT NULL,
        raw_answer TEXT,
        answer TEXT,
        accuracy REAL,
        failure TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run, retriever, shot, question_id)
      ) WITHOUT ROWID;
      CREATE TABLE vlm_cache (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        kind TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    description: "run leases (which process works on a run) and run inputs (artefacts a run reads)",
    sql: `
      -- At most one process works on a run at a time. A row names the holder; the holder refreshes
      -- heartbeat_at while it works and deletes the row when it stops. A row whose holder died is
      -- stale: its run shows as interrupted and the next process takes the lease over.
      CREATE TABLE leases (
        run TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
      );
      -- Files a run read (path as stored for artefacts: relative to artifacts/ when inside it), so
      -- an artefact that a run was made from is never replaced under it.
      CREATE TABLE run_inputs (
        run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (run, path)
      );
      CREATE INDEX run_inputs_by_path ON run_inputs(path);
    `,
  },
  {
    version: 3,
    description: "stage_items: per-item results of resumable stages (beam search anchors, rollout queries)",
    sql: `
      CREATE TABLE stage_items (
        run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        stage TEXT NOT NULL,
        key TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        value TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run, stage, key)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    description: "paths inside the workspace stored workspace-relative (<workspace>/…), URL passwords redacted",
    sql: "",
    run: storeWorkspaceRelative,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** Current schema version of an open database (0 for a fresh one). */
export function schemaVersion(db: Database): number {
  const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").get();
  if (table === undefined) return 0;
  const row = db.prepare("SELECT MAX(version) AS version FROM schema_version").get() as { version: number | null };
  return row.version ?? 0;
}

/**
 * Brings the database up to `SCHEMA_VERSION`. Refuses a database written by a newer lever, before
 * touching it, because old code could corrupt tables it does not understand. Each step takes the
 * write lock first (BEGIN IMMEDIATE) and re-reads the version under it, so two processes opening
 * the same old workspace apply every step exactly once.
 */
export function migrate(db: Database, file: string, migrations: readonly Migration[] = MIGRATIONS): number {
  const known = migrations.length > 0 ? migrations[migrations.length - 1].version : 0;
  const current = schemaVersion(db);
  if (current > known) {
    throw new LeverError(
      `workspace schema version ${current} is newer than this lever supports (${known}); upgrade lever to open it`,
      { file, field: "schema_version" },
    );
  }
  for (const step of migrations) {
    if (step.version <= current) continue;
    db.transaction(() => {
      if (schemaVersion(db) >= step.version) return; // another process applied it meanwhile
      db.exec(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)",
      );
      db.exec(step.sql);
      step.run?.(db, file);
      db.prepare("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)").run(
        step.version,
        step.description,
        new Date().toISOString(),
      );
    }).immediate();
  }
  return schemaVersion(db);
}
