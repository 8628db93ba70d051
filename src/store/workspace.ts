/**
 * A lever workspace: `lever.db` (SQLite, WAL, foreign keys on) plus an `artifacts/` folder. Every write
 * is one transaction; artefact files are written atomically before any record points at them. Opening
 * migrates the schema (src/store/migrations.ts); a newer schema is refused.
 *
 * `Workspace` is built in layers, one table family each, every layer using only those below it:
 * the folder, database, transactions, artefact files and stored paths (src/store/workspace-base.ts) →
 * runs, leases and run inputs (src/store/workspace-runs.ts) → stages and stage items
 * (src/store/workspace-stages.ts) → datasets, items and embeddings (src/store/workspace-datasets.ts) →
 * metrics and predictions (src/store/workspace-results.ts) → opening and closing, here. The SQL of each
 * table is in its own module below them (datasets.ts, runs.ts, leases.ts, stage-items.ts,
 * predictions.ts); the layers add what the database does not know: stored paths, redacted passwords,
 * refusals that name the runs, leases held by this process.
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { LeverError } from "../util/errors.js";
import { READ_ONLY_WORKSPACE, sqliteError, systemError } from "../util/files.js";
import type { RunLease } from "./leases.js";
import { migrate, SCHEMA_VERSION, schemaVersion } from "./migrations.js";
import { ARTIFACTS_DIR, DB_FILE } from "./workspace-base.js";
import { ResultTables } from "./workspace-results.js";

export type * from "./types.js";
export type { RunLease };
export { ARTIFACTS_DIR, DB_FILE };

/** How long a statement waits for another process's write transaction before "database is locked". */
export const BUSY_TIMEOUT_MS = 10_000;

/** Whether this process may write the database and create its WAL files beside it. */
function canWrite(root: string, dbPath: string): boolean {
  try {
    accessSync(root, constants.W_OK);
    if (existsSync(dbPath)) accessSync(dbPath, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** A lever workspace (see the module header); `Workspace.open` opens or creates one. */
export class Workspace extends ResultTables {
  private constructor(dir: string, db: BetterSqlite3.Database, readOnly: boolean) {
    super(dir, db, readOnly);
  }

  /** Whether `dir` already holds a workspace database. */
  static exists(dir: string): boolean {
    return existsSync(join(resolve(dir), DB_FILE));
  }

  /**
   * Opens (and by default creates) the workspace in `dir`, applying pending migrations. With
   * `readOnly` the database is opened read-only and never created or written: what read commands
   * use, so a workspace on a read-only disk (or without write permission) can still be read.
   */
  static open(dir: string, options: { create?: boolean; readOnly?: boolean } = {}): Workspace {
    const root = resolve(dir);
    const dbPath = join(root, DB_FILE);
    const readOnly = options.readOnly === true;
    if (!existsSync(dbPath)) {
      if (readOnly || options.create === false) {
        throw new LeverError("no lever workspace here (import a dataset to create one, or pass --workspace)", {
          file: dbPath,
        });
      }
      if (existsSync(root) && !statSync(root).isDirectory()) {
        throw new LeverError("workspace path exists and is not a directory", { file: root });
      }
      try {
        mkdirSync(root, { recursive: true });
      } catch (error) {
        throw systemError(error, root);
      }
    }
    if (readOnly) return Workspace.openReadOnly(root, dbPath);
    if (!canWrite(root, dbPath)) throw new LeverError(READ_ONLY_WORKSPACE, { file: dbPath });
    let db: BetterSqlite3.Database;
    try {
      db = new BetterSqlite3(dbPath);
    } catch (error) {
      throw sqliteError(error, dbPath, "cannot open workspace database");
    }
    try {
      // First: every later step may have to wait for another process's write transaction.
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      migrate(db, dbPath); // before any pragma that writes, so a too-new database is left untouched
      db.pragma("journal_mode = WAL");
      db.pragma("foreign_keys = ON");
      // WAL + NORMAL: a commit survives a killed process (it is in the WAL file); only an OS crash or
      // power loss can lose the last commits, never corrupt the database. FULL would fsync every small
      // transaction — every arriving VLM answer — and made caching simulator answers 7× slower.
      db.pragma("synchronous = NORMAL");
      db.pragma("cache_size = -65536"); // 64 MiB page cache: a VQAv2 import touches ~300 MB of pages
      mkdirSync(join(root, ARTIFACTS_DIR), { recursive: true });
    } catch (error) {
      db.close();
      if (error instanceof LeverError) throw error;
      throw sqliteError(systemError(error, join(root, ARTIFACTS_DIR)), dbPath, "not a usable lever workspace database");
    }
    return new Workspace(root, db, false);
  }

  private static openReadOnly(root: string, dbPath: string): Workspace {
    let db: BetterSqlite3.Database | undefined;
    let version: number;
    try {
      db = new BetterSqlite3(dbPath, { readonly: true, fileMustExist: true });
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      version = schemaVersion(db);
    } catch (error) {
      db?.close();
      db = undefined;
      const code = (error as { code?: string }).code ?? "";
      if (!/^SQLITE_(READONLY_DIRECTORY|CANTOPEN)/.test(code))
        throw sqliteError(systemError(error, dbPath), dbPath, "not a usable lever workspace database");
      // A WAL database in a directory nobody may write: SQLite cannot create the shared-memory
      // index beside it. The file as it is (cleanly closed, so complete) is read from memory
      // instead, marked as a rollback-journal database (header bytes 18-19: 1 = legacy, 2 = WAL),
      // since an in-memory database has no WAL.
      try {
        const bytes = readFileSync(dbPath);
        if (bytes.length >= 20) bytes.fill(1, 18, 20);
        db = new BetterSqlite3(bytes, { readonly: true });
        version = schemaVersion(db);
      } catch (inner) {
        db?.close();
        throw sqliteError(systemError(inner, dbPath), dbPath, "not a usable lever workspace database");
      }
    }
    if (version === SCHEMA_VERSION) return new Workspace(root, db, true);
    db.close();
    if (version < SCHEMA_VERSION && canWrite(root, dbPath)) {
      Workspace.open(root).close(); // an older workspace: upgrade it once, then read
      return Workspace.openReadOnly(root, dbPath);
    }
    if (version > SCHEMA_VERSION)
      throw new LeverError(
        `workspace schema version ${version} is newer than this lever supports (${SCHEMA_VERSION}); upgrade lever to open it`,
        { file: dbPath, field: "schema_version" },
      );
    throw new LeverError(
      `workspace schema version ${version} needs upgrading to ${SCHEMA_VERSION}, but the workspace is read-only; run any lever command on it once with write access`,
      { file: dbPath },
    );
  }

  /** Releases the runs this workspace holds and closes the database. */
  close(): void {
    for (const lease of [...this.leases.values()]) lease.release();
    if (this.db.open) this.db.close();
  }
}
