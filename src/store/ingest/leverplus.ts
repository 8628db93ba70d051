/**
 * Lever-Plus files (docs/provenance.md#rows) ⇄ workspace artefacts: read a Python artefact, map idx →
 * question id through a stored dataset, validate, and store it (or the reverse). What the CLI's
 * `data import-*` and `data export-*` commands call.
 */
import { basename } from "node:path";
import {
  type ConstructOrder,
  constructOrderFromFileName,
  exportBeams,
  importBeams,
} from "../../data/leverplus/beams.js";
import { type DatasetIndex, datasetIndex } from "../../data/leverplus/common.js";
import { parsePythonJson } from "../../data/leverplus/json.js";
import { importSamplerPools, samplerFromFileName } from "../../data/leverplus/pools.js";
import { exportRollouts, importRollouts } from "../../data/leverplus/rollouts.js";
import {
  type BeamSetSummary,
  type RolloutSetSummary,
  summarizeBeamSet,
  summarizeRolloutSet,
} from "../../data/trajectories.js";
import { writeUserFile } from "../../util/atomic.js";
import { LeverError } from "../../util/errors.js";
import { decodeUtf8, readBytes } from "../../util/files.js";
import { sha256 } from "../../util/hash.js";
import {
  artifactNameFromFile,
  readBeamSet,
  readRolloutSet,
  writeBeamSet,
  writePoolSet,
  writeRolloutSet,
} from "../sets.js";
import type { ArtifactRef } from "../types.js";
import type { Workspace } from "../workspace.js";

/** A Lever-Plus file (strict UTF-8) and the sha256 of its bytes. */
function readSource(file: string): { json: unknown; sha256: string } {
  const bytes = readBytes(file);
  return { json: parsePythonJson(decodeUtf8(bytes, file), file), sha256: sha256(bytes) };
}

function indexOf(ws: Workspace, dataset: string): DatasetIndex {
  ws.requireDataset(dataset);
  return datasetIndex(dataset, ws.loadItems(dataset));
}

export interface ImportedArtifact<S> {
  name: string;
  artifact: ArtifactRef;
  summary: S;
  warnings: string[];
}

export function importBeamsFile(
  ws: Workspace,
  options: { file: string; dataset: string; out?: string; constructOrder?: ConstructOrder; replace?: boolean },
): ImportedArtifact<BeamSetSummary> & { constructOrder: ConstructOrder } {
  const name = options.out ?? artifactNameFromFile(options.file);
  const constructOrder = options.constructOrder ?? constructOrderFromFileName(basename(options.file)) ?? "left";
  const source = readSource(options.file);
  const { set, warnings } = importBeams(source.json, indexOf(ws, options.dataset), {
    file: options.file,
    sha256: source.sha256,
    constructOrder,
  });
  const artifact = writeBeamSet(ws, name, set, { replace: options.replace });
  return { name, artifact, summary: summarizeBeamSet(set), warnings, constructOrder };
}

export function importRolloutsFile(
  ws: Workspace,
  options: { file: string; dataset: string; out?: string; shots?: number; replace?: boolean },
): ImportedArtifact<RolloutSetSummary> {
  const name = options.out ?? artifactNameFromFile(options.file);
  const source = readSource(options.file);
  const { set, warnings } = importRollouts(source.json, indexOf(ws, options.dataset), {
    file: options.file,
    sha256: source.sha256,
    shots: options.shots,
  });
  const artifact = writeRolloutSet(ws, name, set, { replace: options.replace });
  return { name, artifact, summary: summarizeRolloutSet(set), warnings };
}

export interface PoolImportSummary {
  sampler: string;
  k: number;
  queries: number;
  dropped: number;
}

export function importPoolsFile(
  ws: Workspace,
  options: {
    file: string;
    /** Index dataset (the candidates). */
    dataset: string;
    /** Query dataset (the anchors). */
    queries: string;
    out?: string;
    sampler?: string;
    k?: number;
    seed?: number;
    dropConflicts?: boolean;
    replace?: boolean;
  },
): ImportedArtifact<PoolImportSummary> {
  const fromName = samplerFromFileName(basename(options.file));
  const sampler = options.sampler ?? fromName.sampler;
  if (sampler === undefined)
    throw new LeverError("cannot tell the sampler from the file name; pass --sampler NAME", { file: options.file });
  const name = options.out ?? artifactNameFromFile(options.file);
  const source = readSource(options.file);
  const index = indexOf(ws, options.dataset);
  const queries = options.queries === options.dataset ? index : indexOf(ws, options.queries);
  const { set, warnings, dropped } = importSamplerPools(source.json, index, queries, {
    sampler,
    k: options.k ?? fromName.k,
    seed: options.seed,
    file: options.file,
    sha256: source.sha256,
    onConflict: options.dropConflicts ? "drop" : "error",
  });
  const artifact = writePoolSet(ws, name, set, { replace: options.replace });
  return { name, artifact, summary: { sampler, k: set.k, queries: Object.keys(set.pools).length, dropped }, warnings };
}

/** Writes a stored beam set as a Lever-Plus beam file (an existing file with other content only with `replace`). */
export function exportBeamsFile(
  ws: Workspace,
  name: string,
  out: string,
  options: { replace?: boolean } = {},
): BeamSetSummary {
  const set = readBeamSet(ws, name);
  writeUserFile(out, `${JSON.stringify(exportBeams(set, indexOf(ws, set.dataset)))}\n`, options);
  return summarizeBeamSet(set);
}

/** Writes a stored rollout set as a Lever-Plus RL data file (an existing file with other content only with `replace`). */
export function exportRolloutsFile(
  ws: Workspace,
  name: string,
  out: string,
  options: { replace?: boolean } = {},
): RolloutSetSummary {
  const set = readRolloutSet(ws, name);
  writeUserFile(out, `${JSON.stringify(exportRollouts(set, indexOf(ws, set.dataset)))}\n`, options);
  return summarizeRolloutSet(set);
}
