/**
 * Embedding matrices in the workspace: `lever embed import` copies a validated file into
 * artifacts/embeddings/<dataset>/<kind>.npy (+ ids) and registers it; `loadDatasetEmbedding` reads a
 * registered one back with its shape and ids checked against the record.
 */
import { existsSync } from "node:fs";
import { basename } from "node:path";
import {
  checkMatrix,
  EMBEDDING_KINDS,
  type EmbeddingKind,
  type EmbeddingMatrix,
  embeddingArtifactPaths,
  normalizeRows,
  readEmbeddingFile,
  readIdsFile,
  type ValidationReport,
} from "../../data/embeddings.js";
import { encodeNpy, readNpy } from "../../data/npy.js";
import { LeverError } from "../../util/errors.js";
import { hashData, hashFileSync } from "../files.js";
import type { Workspace } from "../workspace.js";

export interface ImportEmbeddingOptions {
  file: string;
  dataset: string;
  kind: EmbeddingKind;
  idsFile?: string;
  /**
   * Rows are the dataset's items in question-id order (Lever-Plus `*_embeddings.pt` exports,
   * docs/provenance.md#embeddings).
   */
  datasetOrder?: boolean;
  normalize?: boolean;
  /** Replace a registered embedding of this kind that has other content. */
  replace?: boolean;
  /** How the file was made, when `lever` made it (`lever embed compute`): kept in the record's details. */
  computedBy?: Record<string, unknown>;
}

export interface ImportEmbeddingResult extends ValidationReport {
  dataset: string;
  kind: EmbeddingKind;
  path: string;
  idsPath: string;
  sha256: string;
  sourceDtype: string;
  idsSource: string;
  /** Rows were scaled to unit norm (`norms` describes them before). */
  normalized: boolean;
}

/**
 * Copies an embedding file into the workspace in canonical form and registers it. Nothing is
 * registered unless the file passed every check; both files are written atomically before the record.
 * A registered embedding of the same kind is only replaced with `replace`, and never once a run read
 * it (re-importing identical content is a no-op write).
 */
export function importEmbedding(ws: Workspace, options: ImportEmbeddingOptions): ImportEmbeddingResult {
  const { file, dataset, kind } = options;
  if (!EMBEDDING_KINDS.includes(kind))
    throw new LeverError(`kind must be one of ${EMBEDDING_KINDS.join(", ")}, got "${kind}"`, { field: "--kind" });
  ws.requireDataset(dataset);
  const datasetIds = ws.loadItems(dataset).map((item) => item.questionId);
  const loaded = readEmbeddingFile(file, {
    idsFile: options.idsFile,
    datasetOrder: options.datasetOrder ? datasetIds : undefined,
  });
  const { report, norms } = checkMatrix(loaded.matrix, file, datasetIds);
  const { matrix } = loaded;
  if (options.normalize) normalizeRows(matrix.data, matrix.dim, norms);
  const paths = embeddingArtifactPaths(dataset, kind);
  const npy = encodeNpy(matrix.data, [matrix.ids.length, matrix.dim]);
  const idsText = `${JSON.stringify(matrix.ids)}\n`;
  const existing = ws.getEmbedding(dataset, kind);
  const same = existing?.sha256 === hashData(npy) && existing.details?.idsSha256 === hashData(idsText);
  if (existing !== undefined && !same && !options.replace)
    throw new LeverError(
      `dataset "${dataset}" already has a "${kind}" embedding with other content (pass --replace to replace it)`,
      { field: "--kind" },
    );
  if (existing !== undefined && !same) ws.refuseReplacingEmbedding(dataset, kind, existing.path);
  const written = ws.writeArtifact(paths.matrix, npy);
  const idsRef = ws.writeArtifact(paths.ids, idsText);
  const source = hashFileSync(file);
  ws.putEmbedding({
    dataset,
    kind,
    path: written.path,
    sha256: written.sha256,
    rows: matrix.ids.length,
    dim: matrix.dim,
    dtype: "float32",
    idsPath: idsRef.path,
    details: {
      source: { file: basename(file), sha256: source.sha256, bytes: source.bytes, dtype: loaded.sourceDtype },
      idsSource:
        loaded.idsSource === "dataset order" || loaded.idsSource === "safetensors metadata"
          ? loaded.idsSource
          : basename(loaded.idsSource),
      idsSha256: idsRef.sha256,
      normalized: options.normalize === true,
      norms: report.norms,
      missingFromMatrix: report.missingFromMatrix,
      ...(options.computedBy !== undefined ? { computedBy: options.computedBy } : {}),
    },
  });
  return {
    ...report,
    dataset,
    kind,
    path: written.path,
    idsPath: idsRef.path,
    sha256: written.sha256,
    sourceDtype: loaded.sourceDtype,
    idsSource: loaded.idsSource,
    normalized: options.normalize === true,
  };
}

/**
 * The registered embedding of `kind` for `dataset`. Rows map through the stored ids file (or the
 * dataset's question-id order when the record has none). Shape and ids are checked against the record.
 */
export function loadDatasetEmbedding(ws: Workspace, dataset: string, kind: string): EmbeddingMatrix {
  const record = ws.getEmbedding(dataset, kind);
  if (record === undefined)
    throw new LeverError(
      `dataset "${dataset}" has no "${kind}" embedding (import one with: lever embed import FILE --dataset ${dataset} --kind ${kind})`,
      { field: "kind" },
    );
  const path = ws.resolveArtifact(record.path);
  if (!existsSync(path)) throw new LeverError("embedding file registered in the workspace is missing", { file: path });
  const array = readNpy(path);
  if (
    array.dtype !== "<f4" ||
    array.shape.length !== 2 ||
    array.shape[0] !== record.rows ||
    array.shape[1] !== record.dim
  )
    throw new LeverError(
      `file holds ${array.dtype} [${array.shape.join(", ")}] but the workspace recorded float32 [${record.rows}, ${record.dim}]`,
      { file: path },
    );
  const ids =
    record.idsPath != null
      ? readIdsFile(ws.resolveArtifact(record.idsPath))
      : ws.loadItems(dataset).map((item) => item.questionId);
  if (ids.length !== record.rows)
    throw new LeverError(`${ids.length} ids for ${record.rows} rows`, { file: record.idsPath ?? path, field: "ids" });
  return { ids, dim: record.dim, data: array.data as Float32Array };
}
