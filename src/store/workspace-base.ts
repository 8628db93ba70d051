/**
 * The ground floor of a `Workspace` (src/store/workspace.ts): its folder, its database handle, write
 * transactions, artefact files under `artifacts/` (written atomically, recorded by their path relative to
 * it and their sha256) and the conversion of paths inside the workspace to their stored, workspace-relative
 * form and back (src/store/files.ts), which every table family above uses.
 */
import { isAbsolute, join, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { writeFileAtomic } from "../util/atomic.js";
import { hashValue } from "../util/hash.js";
import {
  fromStored,
  hashData,
  mapStrings,
  portablePath,
  resolveInside,
  storedForm,
  toStored,
  WORKSPACE_MARK,
} from "./files.js";
import type { ArtifactRef } from "./types.js";

export const DB_FILE = "lever.db";
export const ARTIFACTS_DIR = "artifacts";

/** A workspace's folder, database, transactions, artefact files and stored paths. */
export abstract class WorkspaceBase {
  readonly dir: string;
  /** The database file (lever.db). */
  readonly dbFile: string;
  readonly db: BetterSqlite3.Database;
  readonly artifactsDir: string;
  /** Opened with `readOnly`: every write fails with a "read-only" error. */
  readonly readOnly: boolean;

  protected constructor(dir: string, db: BetterSqlite3.Database, readOnly: boolean) {
    this.dir = dir;
    this.dbFile = join(dir, DB_FILE);
    this.db = db;
    this.readOnly = readOnly;
    this.artifactsDir = join(dir, ARTIFACTS_DIR);
  }

  /**
   * Runs `fn` in one write transaction (nested calls become savepoints). `fn` must be synchronous
   * and short. BEGIN IMMEDIATE takes the write lock up front: a transaction that reads first and
   * writes later could not wait for another process's writer and would fail with "database is locked".
   */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
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

  // ── paths inside the workspace (stored workspace-relative: src/store/files.ts) ─────────────

  /**
   * The stored form of a value: every absolute path inside the workspace in it made workspace-relative,
   * every password in a URL (a `--base-url` with basic auth) replaced by `***` (src/util/redact.ts).
   */
  stored<T>(value: T): T {
    return storedForm(this.dir, value);
  }

  /** The inverse of `stored`: workspace-relative paths resolved in this workspace's folder. */
  resolved<T>(value: T): T {
    return mapStrings(value, (text) => fromStored(this.dir, text));
  }

  /** A path a user gave, as an artefact records it: workspace-relative when inside the workspace, else as given. */
  storedPath(path: string): string {
    const stored = toStored(this.dir, resolve(path));
    return stored.startsWith(WORKSPACE_MARK) ? stored : path;
  }

  /** A run config's hash, as `createRun` stores it: of its stored form, so it does not depend on where the workspace is. */
  configHash(config: unknown): string {
    return hashValue(this.stored(config));
  }
}
