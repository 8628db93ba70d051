/**
 * Beam and rollout sets as workspace artefacts: `artifacts/beams/<name>.json` and
 * `artifacts/rollouts/<name>.json`, canonical JSON (sorted keys), validated on write and on read.
 */
import { existsSync, readFileSync } from "node:fs";
import { NAME_PATTERN } from "../store/datasets.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { canonicalJson } from "../util/hash.js";
import {
  type BeamSet,
  checkBeamSet,
  checkRolloutSet,
  parseBeamSet,
  parseRolloutSet,
  type RolloutSet,
} from "./trajectories.js";

function artifactPath(folder: string, name: string): string {
  if (!NAME_PATTERN.test(name))
    throw new LeverError(`artefact name must be letters, digits, ".", "_", "-" (got "${name}")`, { field: "--out" });
  return `${folder}/${name}.json`;
}

export const beamArtifactPath = (name: string) => artifactPath("beams", name);
export const rolloutArtifactPath = (name: string) => artifactPath("rollouts", name);

/** Refuses to overwrite unless `replace`; the write itself is atomic. */
function write(ws: Workspace, relative: string, value: unknown, replace: boolean): ArtifactRef {
  if (!replace && existsSync(ws.artifactPath(relative)))
    throw new LeverError("artefact already exists (pass --replace to overwrite it)", {
      file: ws.artifactPath(relative),
    });
  return ws.writeArtifact(relative, `${canonicalJson(value)}\n`);
}

function read(ws: Workspace, relative: string): { path: string; json: unknown } {
  const path = ws.artifactPath(relative);
  if (!existsSync(path)) throw new LeverError("no such artefact", { file: path });
  try {
    return { path, json: JSON.parse(readFileSync(path, "utf8")) };
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
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

/** A safe artefact name from a file name: `a:b c.json` → `a_b_c` (Lever-Plus names hold colons and spaces). */
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
