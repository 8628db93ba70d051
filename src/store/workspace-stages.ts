/**
 * The stage tables of a workspace — `stages` and `stage_items` (SQL: src/store/runs.ts,
 * src/store/stage-items.ts): a run's stages begun, their progress, completed with their artefacts
 * (re-hashed from disk first) or failed; the finished items of a resumable stage (beams, rollouts); and,
 * after a command failed, every run it still held recorded failed with its running stages.
 */
import { LeverError } from "../util/errors.js";
import { redactUrlPasswords } from "../util/redact.js";
import { hashFileSync, portablePath } from "./files.js";
import * as runs from "./runs.js";
import * as stageItems from "./stage-items.js";
import type { ArtifactRef, StageItemRow, StageRecord } from "./types.js";
import { RunTables } from "./workspace-runs.js";

/** A workspace's stages of runs and their stored items. */
export abstract class StageTables extends RunTables {
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
    runs.failStage(this.db, runId, name, redactUrlPasswords(error));
  }

  getStage(runId: string, name: string): StageRecord | undefined {
    return runs.getStage(this.db, runId, name);
  }

  listStages(runId: string): StageRecord[] {
    return runs.listStages(this.db, runId);
  }

  /** Stores finished (or failed) items of a resumable stage; a row with the same key replaces the old one. */
  putStageItems(rows: readonly StageItemRow[]): void {
    stageItems.putStageItems(
      this.db,
      rows.map((row) => (row.status === "failed" ? { ...row, error: redactUrlPasswords(row.error) } : row)),
    );
  }

  /** The stored items of a run's stage, in key (question-id) order. */
  getStageItems(runId: string, stage: string): StageItemRow[] {
    return stageItems.getStageItems(this.db, runId, stage);
  }

  /**
   * After a command failed (not Ctrl-C): every run it still holds — one that failed before its stage
   * could fail it, e.g. while the command set up its VLM — is recorded failed with the message (its
   * running stages too) and let go, so it neither reads as running or interrupted forever nor blocks its
   * name (src/store/stage-run.ts).
   */
  failHeldRuns(message: string): void {
    for (const [runId, lease] of [...this.leases]) {
      if (this.getRun(runId)?.status === "running") {
        for (const stage of this.listStages(runId))
          if (stage.status === "running") this.failStage(runId, stage.name, message);
        this.finishRun(runId, "failed", message);
      }
      lease.release();
    }
  }
}
