/**
 * `lever embed compute`: CLIP embeddings of a dataset's images and questions, computed in-process
 * from a local ONNX export (src/embed/clip.ts) and stored exactly as `lever embed import` stores a
 * matrix (same artefact, same checks, same record).
 *
 * Rows are keyed by question id, one per item:
 *   image  the L2-normalised image embedding of the item's image (each distinct image file is
 *          embedded once; questions on one image share its row values)
 *   text   the L2-normalised embedding of the question text (each distinct text embedded once)
 *   joint  normalise(image + text) of the two normalised vectors, the recipe of the Lever-Plus
 *          exports (docs/provenance.md#embeddings) and of the simulator (docs/simulator.md), i.e.
 *          normalise(mean(image, text))
 *
 * Work is done in batches; each finished batch is stored at once (src/embed/partial.ts), so a
 * killed run resumes without recomputing a finished row, and memory holds one or two batches of
 * pixels plus the output rows. The matrix is registered only when every row is computed. A missing
 * or unreadable image stops the run with its file name, unless `skipMissing`: then its questions get
 * no row (never a zero row) and the files are counted and listed in the result.
 */
import { existsSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { z } from "zod";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import { encodeNpy } from "../data/npy.js";
import { hashData, hashFileSync } from "../store/files.js";
import { type ImportEmbeddingResult, importEmbedding } from "../store/ingest/embeddings.js";
import type { Workspace } from "../store/workspace.js";
import { stageTask } from "../task/guard.js";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { type Progress, silentProgress } from "../util/progress.js";
import { type ClipTowers, loadClip, modelFiles, type PreparedImages, type Tower } from "./clip.js";
import { PARTIAL_FORMAT, type PartialIdentity, PartialStore } from "./partial.js";

export const DEFAULT_BATCH = 32;

/** The settings of `lever embed compute` (flags and `--config` are generated from this schema). */
export const ComputeSettingsSchema = z
  .object({
    dataset: z.string().min(1).describe("dataset whose images and questions to embed"),
    kind: z
      .enum(EMBEDDING_KINDS)
      .default("joint")
      .describe("embedding kind (joint = normalise(normalised image + normalised text))"),
    model: z
      .string()
      .min(1)
      .describe("CLIP exported to ONNX (config, preprocessor, tokenizer, onnx/); docs/embeddings.md"),
    batch: z.number().int().positive().default(DEFAULT_BATCH).describe("images or questions per model call"),
    threads: z.number().int().positive().optional().describe("onnxruntime threads (default: one per physical core)"),
    skipMissing: z
      .boolean()
      .default(false)
      .describe("leave questions whose image is missing or unreadable without a row (counted, listed)"),
    replace: z.boolean().default(false).describe("replace a registered embedding of this kind that has other content"),
  })
  .strict();
export type ComputeSettings = z.output<typeof ComputeSettingsSchema>;

export interface ComputeOptions extends Partial<Omit<ComputeSettings, "dataset" | "kind" | "model">> {
  dataset: string;
  kind: EmbeddingKind;
  model: string;
  progress?: Progress;
}

export interface TowerSummary {
  /** Distinct units (image files or question texts) the dataset needs. */
  units: number;
  /** Units computed by this run. */
  computed: number;
  /** Units found already computed by an interrupted run. */
  resumed: number;
}

export interface SkippedImage {
  path: string;
  reason: "missing" | "unreadable";
}

/** What `lever embed import` reports about the stored matrix (rows, dim, norms, coverage, artefact). */
type Stored = Pick<
  ImportEmbeddingResult,
  "dataset" | "kind" | "rows" | "dim" | "norms" | "missingFromMatrix" | "datasetItems" | "path" | "idsPath" | "sha256"
>;

export interface ComputeResult extends Stored {
  /** The model folder, absolute. */
  model: string;
  images?: TowerSummary;
  texts?: TowerSummary;
  /** Images without a row (only with skipMissing). */
  skipped: SkippedImage[];
  /** Items without a row because their image was skipped. */
  itemsWithoutRow: number;
  /** A partial folder of a different run (other model, data or flags) was cleared first. */
  discardedPartial: boolean;
  /** Seconds spent in batches (decoding, preprocessing, the model), and the whole command. */
  embedSeconds: number;
  seconds: number;
  /** Units computed per second of `embedSeconds`. */
  unitsPerSecond: number;
}

/** The distinct images and texts of a dataset, and which one each item uses. */
interface Plan {
  questionIds: string[];
  imagePaths: string[];
  imageOf: Int32Array;
  texts: string[];
  textOf: Int32Array;
}

export async function computeEmbedding(ws: Workspace, options: ComputeOptions): Promise<ComputeResult> {
  const started = performance.now();
  const job = openJob(ws, options);
  const { embedSeconds, computed } = await embedRemaining(job, options.threads);
  const { stored, matrix } = storeMatrix(ws, job, options.replace);
  const summary = (tower: Tower): TowerSummary | undefined =>
    job.towers.includes(tower)
      ? {
          units: job.units[tower].length,
          computed: job.units[tower].length - job.resumed[tower],
          resumed: job.resumed[tower],
        }
      : undefined;
  return {
    dataset: job.dataset,
    kind: job.kind,
    rows: stored.rows,
    dim: stored.dim,
    norms: stored.norms,
    missingFromMatrix: stored.missingFromMatrix,
    datasetItems: stored.datasetItems,
    path: stored.path,
    idsPath: stored.idsPath,
    sha256: stored.sha256,
    model: job.modelDir,
    images: summary("image"),
    texts: summary("text"),
    skipped: matrix.skipped,
    itemsWithoutRow: job.plan.questionIds.length - matrix.ids.length,
    discardedPartial: job.partial.discarded,
    embedSeconds,
    seconds: (performance.now() - started) / 1000,
    unitsPerSecond: embedSeconds > 0 ? computed / embedSeconds : 0,
  };
}

/** One `lever embed compute`: what it embeds, with which model, and the partial store it resumes. */
interface ComputeJob {
  dataset: string;
  kind: EmbeddingKind;
  batch: number;
  skipMissing: boolean;
  progress: Progress;
  towers: Tower[];
  plan: Plan;
  /** Units (image paths, texts) per tower. */
  units: Record<Tower, readonly string[]>;
  /** The model folder, absolute, and the sha256 of each file the towers read (by relative path). */
  modelDir: string;
  modelHashes: Record<string, string>;
  partial: PartialStore;
  /** Units per tower found computed by an interrupted run. */
  resumed: Record<Tower, number>;
}

/**
 * Checks the options, plans the units, hashes the model files, refuses an embedding made another way
 * (before any compute) and opens the partial store of this job.
 */
function openJob(ws: Workspace, options: ComputeOptions): ComputeJob {
  const { dataset, kind } = options;
  if (!EMBEDDING_KINDS.includes(kind))
    throw new LeverError(`kind must be one of ${EMBEDDING_KINDS.join(", ")}, got "${kind}"`, { field: "--kind" });
  const batch = options.batch ?? DEFAULT_BATCH;
  if (!Number.isSafeInteger(batch) || batch < 1)
    throw new LeverError(`must be a positive integer, got ${batch}`, { field: "--batch" });
  const skipMissing = options.skipMissing === true;
  const record = ws.requireDataset(dataset);
  const task = stageTask("embed", { embedded: record });
  const towers: Tower[] = kind === "joint" ? ["image", "text"] : [kind];
  if (towers.includes("text") && task.textTower === null) {
    const message = `dataset "${dataset}" is a ${task.name} dataset: its items have no text to embed (use --kind image)`;
    throw new LeverError(message, { field: "--kind" });
  }
  const plan = planUnits(ws.loadItems(dataset), dataset, towers.includes("image"));
  if (towers.includes("image") && !skipMissing) requireImages(plan.imagePaths);

  const modelDir = resolve(options.model);
  const files = modelFiles(modelDir, towers);
  const modelHashes = Object.fromEntries(files.map((file) => [relative(modelDir, file), hashFileSync(file).sha256]));
  refuseOtherEmbedding(ws, dataset, kind, modelHashes, options.replace === true);
  const units: Record<Tower, readonly string[]> = { image: plan.imagePaths, text: plan.texts };
  const identity: PartialIdentity = {
    format: PARTIAL_FORMAT,
    dataset,
    itemsHash: record.itemsHash,
    kind,
    model: modelHashes,
    units: Object.fromEntries(
      towers.map((tower) => [tower, { count: units[tower].length, sha256: hashData(JSON.stringify(units[tower])) }]),
    ),
    skipMissing,
  };
  const partial = PartialStore.open(ws.artifactPath(`embeddings/${dataset}/.partial-${kind}`), identity);
  const resumed = Object.fromEntries(towers.map((tower) => [tower, partial.done(tower)])) as Record<Tower, number>;
  const progress = options.progress ?? silentProgress;
  return { dataset, kind, batch, skipMissing, progress, towers, plan, units, modelDir, modelHashes, partial, resumed };
}

/** Refuses up front (not after an hour of compute) to replace an embedding made another way. */
function refuseOtherEmbedding(
  ws: Workspace,
  dataset: string,
  kind: EmbeddingKind,
  modelHashes: Record<string, string>,
  replace: boolean,
): void {
  const registered = ws.getEmbedding(dataset, kind);
  const sameModel =
    JSON.stringify((registered?.details?.computedBy as { files?: unknown } | undefined)?.files) ===
    JSON.stringify(modelHashes);
  if (registered !== undefined && !sameModel && !replace)
    throw new LeverError(
      `dataset "${dataset}" already has a ${kind} embedding made another way; pass --replace to compute it again with this model`,
      { field: "--replace" },
    );
}

/** Loads the model and embeds every unit not yet stored, batch by batch (nothing to do: no model load). */
async function embedRemaining(
  job: ComputeJob,
  threads: number | undefined,
): Promise<{ embedSeconds: number; computed: number }> {
  const { towers, units, resumed, partial, batch, progress } = job;
  if (!towers.some((tower) => resumed[tower] < units[tower].length)) return { embedSeconds: 0, computed: 0 };
  let computed = 0;
  const clip = await loadClip(job.modelDir, towers, { threads });
  const embedStarted = performance.now();
  try {
    const total = towers.reduce((sum, tower) => sum + units[tower].length, 0);
    progress.start(
      total,
      towers.reduce((sum, tower) => sum + resumed[tower], 0),
    );
    if (towers.includes("image"))
      computed += await embedImageBatches(clip, partial, job.plan.imagePaths, batch, job.skipMissing, progress);
    if (towers.includes("text")) computed += await embedTextBatches(clip, partial, job.plan.texts, batch, progress);
    progress.finish();
  } finally {
    await clip.dispose();
  }
  return { embedSeconds: (performance.now() - embedStarted) / 1000, computed };
}

/**
 * Assembles the matrix from the partial store, stores it exactly as `lever embed import` does (with
 * the model in its record) and removes the partial store.
 */
function storeMatrix(
  ws: Workspace,
  job: ComputeJob,
  replace: boolean | undefined,
): { stored: ImportEmbeddingResult; matrix: ReturnType<typeof assemble> } {
  const { plan, partial, kind } = job;
  const matrix = assemble(plan, partial, kind, job.towers);
  if (matrix.ids.length === 0)
    throw new LeverError("no image could be read, so there is no row to store", { file: plan.imagePaths[0] });
  const file = join(partial.dir, `${kind}.npy`);
  const idsFile = join(partial.dir, `${kind}.ids.json`);
  writeFileAtomic(file, encodeNpy(matrix.data, [matrix.ids.length, matrix.dim]));
  writeFileAtomic(idsFile, `${JSON.stringify(matrix.ids)}\n`);
  const stored = importEmbedding(ws, {
    file,
    idsFile,
    dataset: job.dataset,
    kind,
    replace,
    computedBy: {
      command: "lever embed compute",
      model: basename(job.modelDir),
      files: job.modelHashes,
      skipped: matrix.skipped.length,
    },
  });
  partial.remove();
  return { stored, matrix };
}

/** Distinct image paths and question texts, in the order items first use them. */
function planUnits(
  items: readonly { questionId: string; imagePath: string | null; question: string }[],
  dataset: string,
  needImages: boolean,
): Plan {
  const imageIndex = new Map<string, number>();
  const textIndex = new Map<string, number>();
  const imageOf = new Int32Array(items.length).fill(-1);
  const textOf = new Int32Array(items.length);
  items.forEach((item, i) => {
    if (needImages) {
      if (item.imagePath === null)
        throw new LeverError(
          `dataset "${dataset}" has no image paths (it was imported without --images or --image-template), so it has no image embeddings`,
          { record: item.questionId, field: "imagePath" },
        );
      if (!imageIndex.has(item.imagePath)) imageIndex.set(item.imagePath, imageIndex.size);
      imageOf[i] = imageIndex.get(item.imagePath)!;
    }
    if (!textIndex.has(item.question)) textIndex.set(item.question, textIndex.size);
    textOf[i] = textIndex.get(item.question)!;
  });
  return {
    questionIds: items.map((item) => item.questionId),
    imagePaths: [...imageIndex.keys()],
    imageOf,
    texts: [...textIndex.keys()],
    textOf,
  };
}

/** Fails before any model work when image files are missing, naming the first. */
function requireImages(paths: readonly string[]): void {
  const missing = paths.filter((path) => !existsSync(path));
  if (missing.length > 0)
    throw new LeverError(
      `image file not found (${missing.length} of ${paths.length} images are missing; pass --skip-missing to leave their questions without a row)`,
      { file: missing[0] },
    );
}

/**
 * Embeds the images from the stored prefix on, one batch at a time; the next batch is decoded
 * while the model runs on the current one. Returns the number of images processed.
 */
async function embedImageBatches(
  clip: ClipTowers,
  partial: PartialStore,
  paths: readonly string[],
  batch: number,
  skipMissing: boolean,
  progress: Progress,
): Promise<number> {
  const first = partial.done("image");
  const prepare = (start: number): Promise<PreparedImages> | undefined => {
    if (start >= paths.length) return undefined;
    const pending = clip.prepareImages(paths.slice(start, Math.min(start + batch, paths.length)));
    pending.catch(() => {}); // awaited below; keeps an early failure from being reported as unhandled
    return pending;
  };
  let next = prepare(first);
  for (let start = first; start < paths.length; start += batch) {
    const prepared = (await next)!;
    const count = Math.min(batch, paths.length - start);
    if (prepared.failed.length > 0 && !skipMissing) {
      const failure = prepared.failed[0];
      throw new LeverError(`${failure.message} (pass --skip-missing to leave its questions without a row)`, {
        file: failure.path,
      });
    }
    next = prepare(start + batch);
    const embedded = await clip.embedImages(prepared);
    const dim = clip.dims.image!;
    const rows = new Float32Array(count * dim).fill(Number.NaN);
    prepared.ok.forEach((position, k) => {
      const file = paths[start + position];
      rows.set(modelRow(embedded.subarray(k * dim, (k + 1) * dim), "image embedding", { file }), position * dim);
    });
    partial.writeBatch("image", start, rows, dim);
    progress.advance(count);
  }
  return paths.length - first;
}

/** Embeds the distinct question texts from the stored prefix on. Returns the number processed. */
async function embedTextBatches(
  clip: ClipTowers,
  partial: PartialStore,
  texts: readonly string[],
  batch: number,
  progress: Progress,
): Promise<number> {
  const first = partial.done("text");
  for (let start = first; start < texts.length; start += batch) {
    const chunk = texts.slice(start, Math.min(start + batch, texts.length));
    const embedded = await clip.embedTexts(chunk);
    const dim = clip.dims.text!;
    const rows = new Float32Array(chunk.length * dim);
    chunk.forEach((text, k) => {
      const row = modelRow(embedded.subarray(k * dim, (k + 1) * dim), `text embedding of ${JSON.stringify(text)}`, {});
      rows.set(row, k * dim);
    });
    partial.writeBatch("text", start, rows, dim);
    progress.advance(chunk.length);
  }
  return texts.length - first;
}

/** A model output row scaled to unit L2 norm; a zero or non-finite row is refused, naming the input. */
export function modelRow(row: Float32Array, what: string, where: { file?: string }): Float32Array {
  const unit = unitNorm(row);
  if (unit === undefined) throw new LeverError(`the model returned a zero or non-finite ${what}`, where);
  return unit;
}

/** `row` / ‖row‖₂ (norm accumulated in float64), or undefined when the norm is zero or not finite. */
function unitNorm(row: Float32Array): Float32Array | undefined {
  let sum = 0;
  for (const x of row) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!(norm > 0 && Number.isFinite(norm))) return undefined;
  const out = new Float32Array(row.length);
  for (let c = 0; c < row.length; c++) out[c] = row[c] / norm;
  return out;
}

/**
 * An item's row of `kind` from its unit image and text rows (those the kind needs): the image row, the
 * text row, or joint = normalise(image + text). `lever serve` embeds a request with it too.
 */
export function kindRow(
  kind: EmbeddingKind,
  image: Float32Array | undefined,
  text: Float32Array | undefined,
  record: string,
): Float32Array {
  if (kind === "image") return image!;
  if (kind === "text") return text!;
  const sum = new Float32Array(image!.length);
  for (let c = 0; c < sum.length; c++) sum[c] = image![c] + text![c];
  const joint = unitNorm(sum);
  if (joint === undefined)
    throw new LeverError("image and text embeddings cancel out, so the joint row is zero", { record });
  return joint;
}

/** The stored matrix: one row per item whose image (if needed) was read, in item order. */
function assemble(
  plan: Plan,
  partial: PartialStore,
  kind: EmbeddingKind,
  towers: readonly Tower[],
): { ids: string[]; dim: number; data: Float32Array; skipped: SkippedImage[] } {
  const image = towers.includes("image") ? partial.readTower("image", plan.imagePaths.length) : undefined;
  const text = towers.includes("text") ? partial.readTower("text", plan.texts.length) : undefined;
  if (image !== undefined && text !== undefined && image.dim !== text.dim)
    throw new LeverError(
      `the image tower gives ${image.dim}-d and the text tower ${text.dim}-d embeddings; joint needs one width`,
      { file: partial.dir },
    );
  const dim = (image ?? text)!.dim;
  const skippedUnits = new Set<number>();
  if (image !== undefined)
    for (let u = 0; u < plan.imagePaths.length; u++) if (Number.isNaN(image.rows[u * dim])) skippedUnits.add(u);
  const ids: string[] = [];
  const data = new Float32Array(plan.questionIds.length * dim);
  plan.questionIds.forEach((questionId, i) => {
    if (skippedUnits.has(plan.imageOf[i])) return;
    const out = data.subarray(ids.length * dim, (ids.length + 1) * dim);
    const img = image?.rows.subarray(plan.imageOf[i] * dim, (plan.imageOf[i] + 1) * dim);
    const txt = text?.rows.subarray(plan.textOf[i] * dim, (plan.textOf[i] + 1) * dim);
    out.set(kindRow(kind, img, txt, questionId));
    ids.push(questionId);
  });
  const skipped = [...skippedUnits].map((u) => {
    const path = plan.imagePaths[u];
    return { path, reason: existsSync(path) ? ("unreadable" as const) : ("missing" as const) };
  });
  return { ids, dim, data: data.slice(0, ids.length * dim), skipped };
}
