/**
 * A run's metrics as TensorBoard event files (src/data/tfevents.ts), so researchers can watch training
 * live in TensorBoard, or in W&B and others that read these files, next to the workspace's own
 * `metrics` table (which stays the source of `lever report`). Every run writes into
 * `<workspace>/tensorboard/<run id>/`, so `tensorboard --logdir <workspace>/tensorboard` shows every run
 * as its own series. A resumed training run starts its directory over (`restart`): one file with the
 * metrics it keeps (up to the epoch it resumes at), then what it logs, so no step is shown twice.
 *
 * A metric row becomes the tag `<stage>/<name>` (e.g. `sft/loss`, `grpo/epoch.valAccuracy`) at its step,
 * else its epoch (0-based, as stored), else 0. The file is opened on the first write and appended to with
 * each call, so TensorBoard sees each step as it is logged; a write that fails is a LeverError naming the
 * file.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { encodeFileVersionEvent, encodeScalarEvent, eventFileName, tfRecord } from "../data/tfevents.js";
import { systemError } from "../util/files.js";
import type { MetricRow } from "./types.js";

/** Folder of the workspace that holds every run's event files (`tensorboard --logdir` it). */
export const TENSORBOARD_FOLDER = "tensorboard";

/** A run's event-file directory: `<workspace>/tensorboard/<run id>`. */
export function tensorboardDirOf(workspaceDir: string, runId: string): string {
  return join(workspaceDir, TENSORBOARD_FOLDER, runId);
}

/** One scalar to write: a tag, a non-negative integer step, a value. */
export interface Scalar {
  tag: string;
  step: number;
  value: number;
  /** Seconds since the Unix epoch it was logged at (default: the time of writing). */
  wallTime?: number;
}

/** A metric row as a scalar: tag `<stage>/<name>` at its step, else its epoch, else 0 (at its time, if stored). */
export function metricScalar(row: MetricRow & { createdAt?: string }): Scalar {
  const scalar = { tag: `${row.stage}/${row.name}`, step: row.step ?? row.epoch ?? 0, value: row.value };
  return row.createdAt === undefined ? scalar : { ...scalar, wallTime: Date.parse(row.createdAt) / 1000 };
}

let filesOpened = 0;

/** Appends scalars to one new event file in `dir` (created with the first write). */
export class EventFileWriter {
  private fd: number | null = null;
  private path: string | null = null;

  constructor(
    private readonly dir: string,
    /** Seconds since the Unix epoch. */
    private readonly clock: () => number = () => Date.now() / 1000,
    /** A fixed file name, rewritten from the start (a result written whole, e.g. an evaluation's); default: a new file per writer. */
    private readonly fixedName?: string,
  ) {}

  /** The file written to, once something was. */
  get file(): string | null {
    return this.path;
  }

  write(scalars: readonly Scalar[]): void {
    if (scalars.length === 0) return;
    const wallTime = this.clock();
    const records = scalars.map((s) => tfRecord(encodeScalarEvent({ ...s, wallTime: s.wallTime ?? wallTime })));
    this.append(records, wallTime);
  }

  /** Metric rows as the workspace logs them (`metricScalar`). */
  logMetrics(rows: readonly MetricRow[]): void {
    this.write(rows.map(metricScalar));
  }

  /**
   * Starts the directory over before anything was written: every event file in it is removed, and a new
   * one begins with `kept` (e.g. the metrics a resumed run keeps, `metricScalar` of the stored rows).
   */
  restart(kept: readonly Scalar[]): void {
    if (this.fd !== null) throw new Error("EventFileWriter.restart after a write");
    if (existsSync(this.dir))
      for (const name of readdirSync(this.dir))
        if (name.includes("tfevents")) rmSync(join(this.dir, name), { force: true });
    this.write(kept);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private append(records: readonly Uint8Array[], wallTime: number): void {
    const path =
      this.path ?? join(this.dir, this.fixedName ?? eventFileName(wallTime, hostname(), process.pid, filesOpened));
    try {
      const opening = this.fd === null;
      if (this.fd === null) {
        mkdirSync(this.dir, { recursive: true });
        this.fd = openSync(path, this.fixedName === undefined ? "a" : "w");
        this.path = path;
        filesOpened++;
      }
      const bytes = Buffer.concat(opening ? [tfRecord(encodeFileVersionEvent(wallTime)), ...records] : records);
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      throw systemError(error, path);
    }
  }
}
