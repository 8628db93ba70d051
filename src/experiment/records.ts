/**
 * Stage records: a done stage of `lever run` writes `artifacts/experiments/stages/<stage>-<id>.json`
 * (`{stage, id, outputs, artefacts}`, outputs as in src/experiment/stages.ts), and the next run reuses
 * the stage while the record exists and the artefacts it hands on (outputs whose key ends in `File`, and
 * the named artefacts of its entry's `handsOn`) are as they were when it was done: each recorded with its
 * size and a cheap hash (src/store/files.ts `fingerprintFileSync`). A record written before artefacts were
 * recorded is checked for the files' existence only. Paths inside the workspace are recorded
 * workspace-relative (src/store/files.ts), so a moved workspace reuses its stages.
 *
 * A stage with no record under its identity whose record an earlier build wrote under the identity it
 * gave the stage (scheme 1, src/experiment/identity.ts) is found there: the run adopts it, writing the
 * same record (`adoptedFrom` added) under the identity now and leaving the earlier one as it is.
 */
import { existsSync } from "node:fs";
import { fingerprintFileSync } from "../store/files.js";
import type { Workspace } from "../store/workspace.js";
import { writeFileAtomic } from "../util/atomic.js";
import { readJsonFile } from "../util/files.js";
import { type AnyStageOutputs, STAGE_TABLE, type StageEntry, type StageName } from "./stages.js";

/** A planned stage (src/experiment/plan.ts) as its record knows it. */
interface StageKey {
  stage: StageName;
  id: string;
  /** Its identity under scheme 1, where an earlier build's record may be (null or absent: none). */
  legacyId?: string | null;
}

/** An artefact a done stage handed on, as it was then. */
interface RecordedArtefact {
  path: string;
  bytes: number;
  head: string;
}

/**
 * What the record of a stage says: done (its outputs; `adoptedFrom`: the scheme-1 identity of an earlier
 * build's record, not yet adopted), redo (done, but an artefact is gone or changed: why), or none.
 */
export type StageRecordState = { outputs: AnyStageOutputs; adoptedFrom?: string } | { redo: string } | null;

/** Where a done stage records its outputs. */
export function stageRecordPath(ws: Workspace, stage: StageKey): string {
  return ws.artifactPath(`experiments/stages/${stage.stage}-${stage.id}.json`);
}

/** The absolute paths of the artefacts a stage's outputs hand on. */
function handedOn(ws: Workspace, stage: StageName, outputs: AnyStageOutputs): string[] {
  const files = Object.entries(outputs)
    .filter(([k]) => k.endsWith("File"))
    .map(([, v]) => String(v));
  const entry = STAGE_TABLE[stage] as StageEntry<StageName>;
  return [...files, ...(entry.handsOn?.(outputs) ?? []).map((path) => ws.artifactPath(path))];
}

/**
 * The outputs of a done stage; why it must be redone (an artefact it hands on is gone or changed); or
 * null (not done). Under its identity, else under its scheme-1 identity (an earlier build's record).
 */
export function readStageRecord(ws: Workspace, stage: StageKey): StageRecordState {
  const found = readRecordAt(ws, stage);
  if (found !== null || stage.legacyId === undefined || stage.legacyId === null) return found;
  const earlier = readRecordAt(ws, { stage: stage.stage, id: stage.legacyId });
  return earlier !== null && "outputs" in earlier ? { ...earlier, adoptedFrom: stage.legacyId } : earlier;
}

/** An earlier build's record of a stage, found under `legacyId`, written again under the stage's identity now. */
export function adoptStageRecord(ws: Workspace, stage: StageKey, legacyId: string): void {
  const record = readJsonFile(stageRecordPath(ws, { stage: stage.stage, id: legacyId })) as object;
  writeFileAtomic(
    stageRecordPath(ws, stage),
    `${JSON.stringify({ ...record, id: stage.id, adoptedFrom: legacyId }, null, 2)}\n`,
  );
}

function readRecordAt(ws: Workspace, stage: StageKey): StageRecordState {
  const path = stageRecordPath(ws, stage);
  if (!existsSync(path)) return null;
  const record = ws.resolved(readJsonFile(path) as { outputs: AnyStageOutputs; artefacts?: RecordedArtefact[] });
  const recorded = record.artefacts ?? handedOn(ws, stage.stage, record.outputs).map((p) => ({ path: p }));
  for (const artefact of recorded) {
    const why = artefactChange(artefact);
    if (why !== null) return { redo: `its artefact ${artefact.path} ${why}` };
  }
  return { outputs: record.outputs };
}

/** How an artefact differs from its record ("is gone", "changed …"), or null; a record without size and hash checks existence only. */
function artefactChange(artefact: { path: string } & Partial<RecordedArtefact>): string | null {
  if (!existsSync(artefact.path)) return "is gone";
  if (artefact.bytes === undefined) return null;
  const now = fingerprintFileSync(artefact.path);
  if (now.bytes !== artefact.bytes)
    return `changed since (${now.bytes} bytes, ${artefact.bytes} when the stage was done)`;
  return now.head !== artefact.head ? "changed since (its content differs)" : null;
}

export function writeStageRecord(ws: Workspace, stage: StageKey, outputs: AnyStageOutputs): void {
  const artefacts = handedOn(ws, stage.stage, outputs).map((path) => ({ path, ...fingerprintFileSync(path) }));
  writeFileAtomic(
    stageRecordPath(ws, stage),
    `${JSON.stringify({ stage: stage.stage, id: stage.id, outputs: ws.stored(outputs), artefacts: ws.stored(artefacts) }, null, 2)}\n`,
  );
}
