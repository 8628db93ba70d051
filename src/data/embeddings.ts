/**
 * Embedding matrices: one float32 row per item, keyed by question id (docs/architecture.md — row numbers
 * exist only inside the matrix and are mapped through the id list stored beside it).
 *
 * Accepted inputs: `.npy` (+ an ids file) and `.safetensors` (tensor `embeddings` or the only
 * tensor; ids in `__metadata__.ids` as a JSON string). Our canonical stored form is
 * `<kind>.npy` (float32, rows × dim) + `<kind>.ids.json` (JSON array of question-id strings).
 */
import { existsSync } from "node:fs";
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { readTextFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
import { type NpyData, readNpy } from "./npy.js";
import { readSafetensors, type TensorData } from "./safetensors.js";

export interface EmbeddingMatrix {
  ids: string[];
  dim: number;
  /** Row-major, ids.length × dim. */
  data: Float32Array;
}

export const EMBEDDING_KINDS = ["image", "text", "joint"] as const;
export type EmbeddingKind = (typeof EMBEDDING_KINDS)[number];

/** Norm statistics of the rows, so a user sees at once whether vectors are unit length. */
export interface NormStats {
  min: number;
  max: number;
  mean: number;
}

export interface EmbeddingFile {
  matrix: EmbeddingMatrix;
  /** The element type in the file, before conversion to float32 (e.g. "<f4", "F16"). */
  sourceDtype: string;
  /** Where the ids came from: a file path, "safetensors metadata" or "dataset order". */
  idsSource: string;
}

/**
 * Where the row ids come from, first match wins: `idsFile`, `datasetOrder`, the safetensors
 * `__metadata__.ids`, then a sidecar `<stem>.ids.json` / `<file>.ids.json`.
 */
export interface IdsOption {
  /** A JSON file with the ids (overrides any other source). */
  idsFile?: string;
  /** Rows are the dataset's items in question-id order (as Lever-Plus exports, docs/provenance.md#embeddings). */
  datasetOrder?: readonly string[];
}

const FLOAT_DTYPES = new Set(["<f4", "<f8", "<f2", "F32", "F64", "F16", "BF16"]);

const IDS_MESSAGE = "ids must be a JSON array of question ids (strings or non-negative integers)";
const IdsSchema = z.array(z.union([z.string().min(1), z.number().int().nonnegative()], { error: IDS_MESSAGE }), {
  error: IDS_MESSAGE,
});

/** Reads an embedding file and its ids, converting to float32. Structural checks only (see validateEmbedding). */
export function readEmbeddingFile(path: string, ids: IdsOption = {}): EmbeddingFile {
  if (!existsSync(path)) throw new LeverError("file not found", { file: path });
  const lower = path.toLowerCase();
  let shape: number[];
  let data: NpyData | TensorData;
  let sourceDtype: string;
  let metadataIds: string | undefined;
  if (lower.endsWith(".npy")) {
    ({ shape, data, dtype: sourceDtype } = readNpy(path));
  } else if (lower.endsWith(".safetensors")) {
    const file = readSafetensors(path);
    const names = [...file.tensors.keys()];
    const name = file.tensors.has("embeddings") ? "embeddings" : names.length === 1 ? names[0] : undefined;
    if (name === undefined)
      throw new LeverError(
        `expected a tensor named "embeddings" or exactly one tensor, found ${names.length}: ${names.slice(0, 5).join(", ")}`,
        { file: path },
      );
    ({ shape, data, dtype: sourceDtype } = file.tensors.get(name)!);
    metadataIds = file.metadata.ids;
  } else {
    throw new LeverError("unsupported embedding file type (expected .npy or .safetensors)", { file: path });
  }
  if (!FLOAT_DTYPES.has(sourceDtype))
    throw new LeverError(`embeddings must be floating point (f2, f4, f8), got ${sourceDtype}`, {
      file: path,
      field: "dtype",
    });
  if (shape.length !== 2)
    throw new LeverError(`must be 2-D (rows × dim), got shape [${shape.join(", ")}]`, { file: path, field: "shape" });
  const [rows, dim] = shape;
  if (rows === 0) throw new LeverError("has zero rows", { file: path, field: "shape" });
  if (dim === 0) throw new LeverError("has zero columns", { file: path, field: "shape" });
  const floats = data instanceof Float32Array ? data : Float32Array.from(data as Float64Array);

  let rowIds: string[];
  let idsSource: string;
  if (ids.idsFile !== undefined) {
    rowIds = readIdsFile(ids.idsFile);
    idsSource = ids.idsFile;
  } else if (ids.datasetOrder !== undefined) {
    if (ids.datasetOrder.length !== rows)
      throw new LeverError(
        `has ${rows} rows but the dataset has ${ids.datasetOrder.length} items, so rows cannot be its items in order`,
        { file: path, field: "shape" },
      );
    rowIds = [...ids.datasetOrder];
    idsSource = "dataset order";
  } else if (metadataIds !== undefined) {
    rowIds = parseIds(metadataIds, path, "__metadata__.ids");
    idsSource = "safetensors metadata";
  } else {
    const sidecar = sidecarIdsPath(path);
    if (sidecar === undefined)
      throw new LeverError(
        `no row ids: put them in ${idsPathFor(path)} (a JSON array of question ids), pass --ids FILE, or --dataset-order if row r is the r-th item in question-id order`,
        { file: path },
      );
    rowIds = readIdsFile(sidecar);
    idsSource = sidecar;
  }
  if (rowIds.length !== rows)
    throw new LeverError(`has ${rows} rows but ${rowIds.length} ids (from ${idsSource})`, {
      file: path,
      field: "shape",
    });
  return { matrix: { ids: rowIds, dim, data: floats }, sourceDtype, idsSource };
}

/** `<stem>.ids.json` for `<stem>.npy`: our canonical ids file name. */
export function idsPathFor(matrixPath: string): string {
  return `${matrixPath.replace(/\.(npy|safetensors)$/i, "")}.ids.json`;
}

/** The ids file beside a matrix: `<stem>.ids.json`, else `<file>.ids.json`. */
function sidecarIdsPath(matrixPath: string): string | undefined {
  return [idsPathFor(matrixPath), `${matrixPath}.ids.json`].find((p) => existsSync(p));
}

export function readIdsFile(path: string): string[] {
  if (!existsSync(path)) throw new LeverError("ids file not found", { file: path });
  return parseIds(readTextFile(path), path);
}

/** A JSON array of question ids; numbers become their decimal string. */
function parseIds(text: string, file: string, field?: string): string[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new LeverError(`ids are not valid JSON (${(error as Error).message})`, { file, field });
  }
  return parseOrThrow(IdsSchema, json, { file, recordsAt: true, fieldPrefix: field }).map((id) => String(id));
}

export interface ValidationReport {
  rows: number;
  dim: number;
  norms: NormStats;
  /** Dataset items without a row (only when a dataset was given). */
  missingFromMatrix?: number;
  datasetItems?: number;
}

/**
 * Checks everything that would silently corrupt later stages: duplicate ids, ids outside the
 * dataset, NaN/Inf values, all-zero rows. Throws on the first problem, naming the file, the row id
 * and the column. Returns norm statistics and dataset coverage.
 */
export function validateEmbedding(
  matrix: EmbeddingMatrix,
  file: string,
  datasetIds?: readonly string[],
): ValidationReport {
  return checkMatrix(matrix, file, datasetIds).report;
}

/** validateEmbedding, also returning the row norms so normalising needs no second pass. */
export function checkMatrix(
  matrix: EmbeddingMatrix,
  file: string,
  datasetIds?: readonly string[],
): { report: ValidationReport; norms: Float64Array } {
  const { ids, dim, data } = matrix;
  if (data.length !== ids.length * dim)
    throw new LeverError(`data holds ${data.length} values, not ${ids.length} rows × ${dim}`, { file });
  const seen = new Map<string, number>();
  ids.forEach((id, row) => {
    const first = seen.get(id);
    if (first !== undefined)
      throw new LeverError(`id "${id}" appears at rows ${first} and ${row}`, { file, record: id, field: "ids" });
    seen.set(id, row);
  });
  let missingFromMatrix: number | undefined;
  if (datasetIds !== undefined) {
    const known = new Set(datasetIds);
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0)
      throw new LeverError(
        `${unknown.length} of ${ids.length} ids are not in the dataset (first: ${unknown
          .slice(0, 5)
          .map((id) => JSON.stringify(id))
          .join(", ")})`,
        { file, field: "ids" },
      );
    missingFromMatrix = datasetIds.length - ids.length;
  }
  // One pass: a row's float64 sum of squares is finite exactly when all its values are (512
  // float32 squares cannot overflow float64), so only a non-finite norm needs a closer look.
  const norms = rowNorms(data, dim);
  for (let row = 0; row < norms.length; row++) {
    if (Number.isFinite(norms[row]) && norms[row] > 0) continue;
    const where = { file, record: ids[row], field: `row ${row}` };
    if (norms[row] === 0) throw new LeverError("row is all zeros (cosine similarity is undefined)", where);
    const column = firstNonFinite(data.subarray(row * dim, (row + 1) * dim));
    throw new LeverError(`value ${data[row * dim + column]} at column ${column} is not finite`, where);
  }
  const report: ValidationReport = {
    rows: ids.length,
    dim,
    norms: normStats(norms),
    ...(datasetIds !== undefined ? { missingFromMatrix, datasetItems: datasetIds.length } : {}),
  };
  return { report, norms };
}

/** Index of the first NaN/±Inf value, or -1. */
export function firstNonFinite(data: Float32Array): number {
  for (let i = 0; i < data.length; i++) {
    // x - x is NaN exactly when x is NaN or ±Inf; cheaper than Number.isFinite in this hot loop.
    if (data[i] - data[i] !== 0) return i;
  }
  return -1;
}

/**
 * cos(a, b) of two embedding rows, accumulated in float64 (rows need not be unit length); 0 when either
 * row is zero. The one cosine the vote retriever (src/eval/vote-retriever.ts) and the selector's candidate
 * features (src/selector/inputs.ts) read, so both see the same numbers.
 */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa > 0 && bb > 0 ? dot / Math.sqrt(aa * bb) : 0;
}

/** Euclidean norm of each row, accumulated in float64. */
export function rowNorms(data: Float32Array, dim: number): Float64Array {
  const rows = data.length / dim;
  const norms = new Float64Array(rows);
  for (let r = 0, offset = 0; r < rows; r++, offset += dim) {
    let sum = 0;
    for (let c = 0; c < dim; c++) sum += data[offset + c] * data[offset + c];
    norms[r] = Math.sqrt(sum);
  }
  return norms;
}

export function normStats(norms: Float64Array): NormStats {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let sum = 0;
  for (const n of norms) {
    if (n < min) min = n;
    if (n > max) max = n;
    sum += n;
  }
  return { min, max, mean: norms.length > 0 ? sum / norms.length : Number.NaN };
}

/** Scales every row to unit L2 norm, in place. Rows must be non-zero (validateEmbedding checks). */
export function normalizeRows(data: Float32Array, dim: number, norms: Float64Array = rowNorms(data, dim)): void {
  for (let r = 0, offset = 0; r < norms.length; r++, offset += dim) {
    const scale = 1 / norms[r];
    for (let c = 0; c < dim; c++) data[offset + c] *= scale;
  }
}

/** Row number of each id. */
export function rowIndex(matrix: EmbeddingMatrix): Map<string, number> {
  return new Map(matrix.ids.map((id, row) => [id, row]));
}

/** Artefact paths (relative to artifacts/) of a dataset's embedding of one kind. */
export function embeddingArtifactPaths(dataset: string, kind: string): { matrix: string; ids: string } {
  return { matrix: `embeddings/${dataset}/${kind}.npy`, ids: `embeddings/${dataset}/${kind}.ids.json` };
}
