/**
 * Stage records: a done stage of `lever run` writes `artifacts/experiments/stages/<stage>-<id>.json`
 * (`{stage, id, outputs}`, outputs as in src/experiment/stages.ts), and the next run reuses the stage
 * while the record exists and the files it names (outputs whose key ends in `File`) still do. Paths
 * inside the workspace are recorded workspace-relative (src/store/files.ts), so a moved workspace
 * reuses its stages.
 */
import { existsSync } from "node:fs";
import type { Workspace } from "../store/workspace.js";
import { writeFileAtomic } from "../util/atomic.js";
import { readJsonFile } from "../util/files.js";
import type { AnyStageOutputs, StageName } from "./stages.js";

/** A planned stage (src/experiment/plan.ts) as its record knows it. */
interface StageKey {
  stage: StageName;
  id: string;
}

/** Where a done stage records its outputs. */
export function stageRecordPath(ws: Workspace, stage: StageKey): string {
  return ws.artifactPath(`experiments/stages/${stage.stage}-${stage.id}.json`);
}

/** The outputs of a done stage, or null (not done, or its files are gone). */
export function readStageRecord(ws: Workspace, stage: StageKey): AnyStageOutputs | null {
  const path = stageRecordPath(ws, stage);
  if (!existsSync(path)) return null;
  const record = ws.resolved(readJsonFile(path) as { outputs: Record<string, string> });
  // A record whose files were deleted since is not a done stage.
  const files = Object.entries(record.outputs)
    .filter(([k]) => k.endsWith("File"))
    .map(([, v]) => v);
  return files.every((f) => existsSync(f)) ? (record.outputs as unknown as AnyStageOutputs) : null;
}

export function writeStageRecord(ws: Workspace, stage: StageKey, outputs: AnyStageOutputs): void {
  writeFileAtomic(
    stageRecordPath(ws, stage),
    `${JSON.stringify({ stage: stage.stage, id: stage.id, outputs: ws.stored(outputs) }, null, 2)}\n`,
  );
}
