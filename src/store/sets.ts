/**
 * Named JSON artefacts of the workspace — pool sets (`artifacts/pools/<name>.json`), beam sets
 * (`artifacts/beams/<name>.json`) and rollout sets (`artifacts/rollouts/<name>.json`) — written as
 * canonical JSON (sorted keys) atomically, validated on write and on read. An existing artefact is
 * only replaced when the caller says so.
 */
import { existsSync, readFileSync } from "node:fs";
import { checkPoolSet, type PoolSet, parsePoolSet } from "../data/pool-set.js";
import {
  type BeamSet,
  checkBeamSet,
  checkRolloutSet,
  parseBeamSet,
  parseRolloutSet,
  type RolloutSet,
} from "../data/trajectories.js";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { canonicalJson, sha256 } from "../util/hash.js";
import { NAME_PATTERN } from "./datasets.js";
import type { ArtifactRef } from "./types.js";
import type { Workspace } from "./workspace.js";

function artifactPath(folder: string, name: string): string {
  if (!NAME_PATTERN.test(name))
    throw new LeverError(`artefact name must be letters, digits, ".", "_", "-" (got "${name}")`, { field: "--out" });
  return `${folder}/${name}.json`;
}

export const poolArtifactPath = (name: string) => artifactPath("pools", name);
export const beamArtifactPath = (name: string) => artifactPath("beams", name);
export const rolloutArtifactPath = (name: string) => artifactPath("rollouts", name);

/**
 * Writes atomically. An existing artefact with other content is only replaced with `replace`, and
 * never when a run read it (the run could no longer be resumed or reproduced); one with identical
 * content is left as it is (re-running a deterministic stage is a no-op).
 */
function write(ws: Workspace, relative: string, value: unknown, replace: boolean): ArtifactRef {
  const text = `${canonicalJson(value)}\n`;
  const path = ws.artifactPath(relative);
  if (existsSync(path)) {
    const existing = readFileSync(path);
    if (existing.equals(Buffer.from(text))) return { path: relative, sha256: sha256(existing) };
    if (!replace)
      throw new LeverError("artefact already exists with other content (pass --replace to overwrite it)", {
        file: path,
      });
    refuseReadArtefact(ws, relative, path);
  }
  return ws.writeArtifact(relative, text);
}

function refuseReadArtefact(ws: Workspace, relative: string, path: string): void {
  const readers = ws.runsReading(relative);
  if (readers.length > 0)
    throw new LeverError(
      `artefact is an input of run ${readers.join(", ")}, so it is never replaced; write under another name (--out)`,
      { file: path },
    );
}

/**
 * Before a stage's work (`relative`: e.g. `beamArtifactPath(name)`, which checks the name): `--replace` of
 * an artefact a run read is refused now, as its write would refuse it after the work.
 */
export function checkWritable(ws: Workspace, relative: string, replace: boolean): void {
  const path = ws.artifactPath(relative);
  if (replace && existsSync(path)) refuseReadArtefact(ws, relative, path);
}

function read(ws: Workspace, relative: string): { path: string; json: unknown } {
  const path = ws.artifactPath(relative);
  if (!existsSync(path)) throw new LeverError("no such artefact", { file: path });
  return { path, json: readJsonFile(path) };
}

export function writePoolSet(
  ws: Workspace,
  name: string,
  set: PoolSet,
  options: { replace?: boolean } = {},
): ArtifactRef {
  checkPoolSet(set, poolArtifactPath(name));
  return write(ws, poolArtifactPath(name), set, options.replace === true);
}

export function readPoolSet(ws: Workspace, name: string): PoolSet {
  const { path, json } = read(ws, poolArtifactPath(name));
  return parsePoolSet(json, path);
}

export function writeBeamSet(
  ws: Workspace,
  name: string,
  set: BeamSet,
  options: { replace?: boolean } = {},
): ArtifactRef {
  checkBeamSet(set, beamArtifactPath(name));
  return write(ws, beamArtifactPath(name), set, options.replace === true);
}

export function readBeamSet(ws: Workspace, name: string): BeamSet {
  const { path, json } = read(ws, beamArtifactPath(name));
  return parseBeamSet(json, path);
}

export function writeRolloutSet(
  ws: Workspace,
  name: string,
  set: RolloutSet,
  options: { replace?: boolean } = {},
): ArtifactRef {
  checkRolloutSet(set, rolloutArtifactPath(name));
  return write(ws, rolloutArtifactPath(name), set, options.replace === true);
}

export function readRolloutSet(ws: Workspace, name: string): RolloutSet {
  const { path, json } = read(ws, rolloutArtifactPath(name));
  return parseRolloutSet(json, path);
}

/**
 * A safe artefact name from a file name: `a:b c.json` → `a_b_c` (Lever-Plus names hold colons and
 * spaces, docs/provenance.md#samplers).
 */
export function artifactNameFromFile(fileName: string): string {
  const stem = fileName
    .replace(/^.*[\\/]/, "")
    .replace(/\.json$/i, "")
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 128);
  if (!NAME_PATTERN.test(stem))
    throw new LeverError("cannot derive an artefact name from the file name; pass --out NAME", { file: fileName });
  return stem;
}

/** A set given by name (under artifacts/<folder>/) or as a file path, parsed and checked; with the file it came from. */
export interface ResolvedSet<T> {
  set: T;
  file: string;
}

/** A stored artefact of that name wins; otherwise `ref` must be a file. */
function resolveRef<T>(
  ws: Workspace,
  ref: string,
  folder: string,
  parse: (json: unknown, file: string) => T,
): ResolvedSet<T> {
  const stored = NAME_PATTERN.test(ref) ? ws.artifactPath(artifactPath(folder, ref)) : null;
  const file = stored !== null && existsSync(stored) ? stored : ref;
  if (!existsSync(file))
    throw new LeverError(`no such artefact: neither a name under artifacts/${folder}/ nor a file`, { file: ref });
  return { set: parse(readJsonFile(file), file), file };
}

export const resolvePoolSet = (ws: Workspace, ref: string) => resolveRef(ws, ref, "pools", parsePoolSet);
export const resolveBeamSet = (ws: Workspace, ref: string) => resolveRef(ws, ref, "beams", parseBeamSet);
export const resolveRolloutSet = (ws: Workspace, ref: string) => resolveRef(ws, ref, "rollouts", parseRolloutSet);
