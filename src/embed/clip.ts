/**
 * CLIP image and text towers run in-process from a local folder, through @huggingface/transformers
 * (its CLIP classes, tokenizer and image processor) on onnxruntime-node's CPU backend. Nothing is
 * fetched: remote models and the library's file cache are switched off, and the folder is checked
 * first so a missing file is named before the library is even loaded.
 *
 * The folder is an ONNX export of a Hugging Face CLIP model in the layout the library reads (what
 * `optimum-cli export onnx` and the Xenova/ conversions produce; docs/embeddings.md says how to get
 * one): config.json, preprocessor_config.json, tokenizer.json + tokenizer_config.json,
 * onnx/vision_model.onnx (CLIPVisionModelWithProjection: pixel_values → image_embeds) and
 * onnx/text_model.onnx (CLIPTextModelWithProjection: input_ids[, attention_mask] → text_embeds).
 *
 * Contract: rows come back as the model's raw projections (not normalised), row-major [n, dim];
 * images are decoded one by one so a missing or unreadable file is reported by name, and resized
 * as the Python processor resizes them (src/embed/resize.ts) before the library's CLIP image
 * processor crops, rescales and normalises them with the folder's settings; text batches
 * are padded (right, with the pad token, attention mask 0) to their longest question.
 *
 * Long questions are cut to the tokenizer's model_max_length (77 for CLIP) keeping the end-of-text
 * token last, as Hugging Face's Python tokenizers and OpenAI's clip.tokenize do: CLIP pools the
 * hidden state at that token. (The library's own `truncation: true` cuts after adding the special
 * tokens and so drops it, which changes the embedding of every question longer than 75 tokens.)
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Sharp } from "sharp";
import { LeverError } from "../util/errors.js";
import { type RgbImage, resizerFor } from "./resize.js";

export type Tower = "image" | "text";

/** Files each tower needs, relative to the model folder (fp32 exports: the library's default names). */
export const TOWER_FILES: Record<Tower, readonly string[]> = {
  image: ["config.json", "preprocessor_config.json", "onnx/vision_model.onnx"],
  text: ["config.json", "tokenizer.json", "tokenizer_config.json", "onnx/text_model.onnx"],
};

/** The session's input that must exist and the output read, per tower (the Hugging Face export names). */
const TOWER_IO: Record<Tower, { file: string; input: string; output: string; exportAs: string }> = {
  image: {
    file: "onnx/vision_model.onnx",
    input: "pixel_values",
    output: "image_embeds",
    exportAs: "CLIPVisionModelWithProjection",
  },
  text: {
    file: "onnx/text_model.onnx",
    input: "input_ids",
    output: "text_embeds",
    exportAs: "CLIPTextModelWithProjection",
  },
};

/**
 * The model files `towers` need, in a fixed order, after checking that the folder and each file
 * exist and that the JSON files parse. External-data files beside an .onnx file are included.
 */
export function modelFiles(dir: string, towers: readonly Tower[]): string[] {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new LeverError("model folder not found (see docs/embeddings.md for how to get a CLIP export)", {
      file: root,
    });
  const names = [...new Set(towers.flatMap((tower) => TOWER_FILES[tower]))];
  const files: string[] = [];
  for (const name of names) {
    const path = join(root, name);
    if (!existsSync(path))
      throw new LeverError(
        `model file missing: the folder must hold ${names.join(", ")} (an ONNX export of a Hugging Face CLIP model; see docs/embeddings.md)`,
        { file: path },
      );
    if (name.endsWith(".json")) {
      try {
        JSON.parse(readFileSync(path, "utf8"));
      } catch (error) {
        throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
      }
    }
    files.push(path);
    for (const extra of [`${path}_data`, `${path}.data`]) if (existsSync(extra)) files.push(extra);
  }
  return files;
}

/** One decoded-and-preprocessed batch of images; `failed` lists the inputs that could not be read. */
export interface PreparedImages {
  /** Positions (in the requested list) of the images in `pixels`, in order. */
  ok: number[];
  failed: { index: number; path: string; reason: "missing" | "unreadable"; message: string }[];
  /** The processor's pixel_values for the `ok` images (absent when none could be read). */
  pixels?: unknown;
}

export interface ClipTowers {
  /** Embedding width of each loaded tower (measured on a probe input at load time). */
  readonly dims: Partial<Record<Tower, number>>;
  /**
   * Decodes, resizes, crops and normalises images with the model's own preprocessor settings: files
   * by path, or images already in memory (encoded bytes, e.g. a `lever serve` request's).
   */
  prepareImages(paths: readonly (string | Uint8Array)[]): Promise<PreparedImages>;
  /** image_embeds of a prepared batch, row-major [ok.length, dim]. */
  embedImages(prepared: PreparedImages): Promise<Float32Array>;
  /** text_embeds of the texts, row-major [texts.length, dim]. */
  embedTexts(texts: readonly string[]): Promise<Float32Array>;
  dispose(): Promise<void>;
}

export interface LoadOptions {
  /** onnxruntime intra-op threads (default: onnxruntime's own choice, one per physical core). */
  threads?: number;
}

type Library = typeof import("@huggingface/transformers");

interface Runner {
  sessions: Record<string, { inputNames: string[]; outputNames: string[] }>;
  (inputs: Record<string, unknown>): Promise<Record<string, { dims: number[]; data: unknown }>>;
  dispose(): Promise<unknown>;
}

/** Loads the requested towers (and their tokenizer / image processor) from `dir`. */
export async function loadClip(dir: string, towers: readonly Tower[], options: LoadOptions = {}): Promise<ClipTowers> {
  const root = resolve(dir);
  modelFiles(root, towers);
  const loaded: LoadedTowers = { hf: await offlineLibrary(), root, runners: {}, dims: {} };
  const api = towersApi(loaded);
  const modelOptions = sessionOptions(options);
  try {
    for (const tower of towers) await loadTower(loaded, tower, modelOptions);
    // One probe per tower fixes the embedding width (and shows a broken export) before any real work.
    if (towers.includes("image")) {
      const grey = { data: Buffer.alloc(64 * 64 * 3, 128), width: 64, height: 64 };
      await runTower(loaded, "image", { pixel_values: await loaded.toPixels!([grey]) }, 1);
    }
    if (towers.includes("text")) await api.embedTexts(["a photo"]);
  } catch (error) {
    await api.dispose(); // a tower loaded before the failure holds native memory
    throw error;
  }
  return api;
}

/** What loading fills in: per tower its session runner and measured width, and its preprocessing. */
interface LoadedTowers {
  hf: Library;
  /** The model folder, absolute. */
  root: string;
  runners: Partial<Record<Tower, Runner>>;
  dims: Partial<Record<Tower, number>>;
  /** Image tower: reads, decodes and resizes one file; turns resized images into pixel_values. */
  decode?: (source: string | Uint8Array) => Promise<Decoded>;
  toPixels?: (images: RgbImage[]) => Promise<unknown>;
  /** Text tower: input_ids and attention_mask of a batch. */
  tokenize?: (texts: readonly string[]) => Record<string, unknown>;
}

/** The library, switched to local files only (no download, no file cache) and quiet. */
async function offlineLibrary(): Promise<Library> {
  const hf: Library = await import("@huggingface/transformers");
  hf.env.allowRemoteModels = false;
  hf.env.allowLocalModels = true;
  hf.env.useFSCache = false;
  hf.env.useBrowserCache = false;
  hf.env.logLevel = hf.LogLevel.ERROR;
  return hf;
}

/** The library's model options: local fp32 files on the CPU, onnxruntime's threads as asked. */
function sessionOptions(options: LoadOptions) {
  return {
    local_files_only: true,
    dtype: "fp32" as const,
    device: "cpu" as const,
    session_options: {
      ...(options.threads !== undefined ? { intraOpNumThreads: options.threads, interOpNumThreads: 1 } : {}),
      // onnxruntime's idle worker threads busy-wait for work by default, taking cores from image
      // decoding between runs and from other jobs (on 2 shared, busy cores: 450 instead of 600 ms
      // per ViT-B/32-shaped image without spinning).
      extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
    },
  };
}

/** Loads one tower's session (checking its input and output names) and its image processor or tokenizer. */
async function loadTower(
  loaded: LoadedTowers,
  tower: Tower,
  modelOptions: ReturnType<typeof sessionOptions>,
): Promise<void> {
  const { hf, root } = loaded;
  const io = TOWER_IO[tower];
  const file = join(root, io.file);
  const load = tower === "image" ? hf.CLIPVisionModelWithProjection : hf.CLIPTextModelWithProjection;
  const runner = (await libraryCall(() => load.from_pretrained(root, modelOptions), file)) as unknown as Runner;
  loaded.runners[tower] = runner;
  const session = runner.sessions.model;
  if (!session.outputNames.includes(io.output) || !session.inputNames.includes(io.input))
    throw new LeverError(
      `the model has inputs [${session.inputNames.join(", ")}] and outputs [${session.outputNames.join(", ")}]; expected input "${io.input}" and output "${io.output}" (export it as ${io.exportAs}, see docs/embeddings.md)`,
      { file },
    );
  if (tower === "image") await loadImageProcessor(loaded);
  else await loadTokenizer(loaded);
}

/**
 * Resize as the Python processor does (src/embed/resize.ts); centre crop, rescale and
 * normalisation by the library's CLIP image processor with the folder's settings.
 */
async function loadImageProcessor(loaded: LoadedTowers): Promise<void> {
  const { hf, root } = loaded;
  const configFile = join(root, "preprocessor_config.json");
  const config = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
  const sharp = (await import("sharp")).default;
  const resize = resizerFor(sharp, config, configFile);
  const processor = new hf.CLIPImageProcessor({ ...config, do_resize: false } as never);
  loaded.decode = (source) => decodeImage(sharp, source, resize);
  loaded.toPixels = async (images) => {
    const raw = images.map(
      ({ data, width, height }) =>
        new hf.RawImage(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), width, height, 3),
    );
    return (await libraryCall(() => processor(raw), configFile)).pixel_values;
  };
}

/** The folder's tokenizer, cutting long questions as textInputs says. */
async function loadTokenizer(loaded: LoadedTowers): Promise<void> {
  const { hf, root } = loaded;
  const tok = await libraryCall(
    () => hf.AutoTokenizer.from_pretrained(root, { local_files_only: true }),
    join(root, "tokenizer.json"),
  );
  loaded.tokenize = (texts) => {
    const encoded = tok([...texts], { padding: false, truncation: false, return_tensor: false });
    return textInputs(hf, encoded.input_ids as number[][], tok.model_max_length, tok.pad_token_id ?? 0);
  };
}

/** Runs a tower on a batch of `rows` inputs: its output rows, checked for shape and a width that never changes. */
async function runTower(
  loaded: LoadedTowers,
  tower: Tower,
  inputs: Record<string, unknown>,
  rows: number,
): Promise<Float32Array> {
  const { dims } = loaded;
  const io = TOWER_IO[tower];
  const file = join(loaded.root, io.file);
  const outputs = await libraryCall(() => loaded.runners[tower]!(inputs), file);
  const out = outputs[io.output];
  if (out.dims.length !== 2 || out.dims[0] !== rows || !(out.data instanceof Float32Array))
    throw new LeverError(`output "${io.output}" has shape [${out.dims.join(", ")}]; expected float32 [${rows}, dim]`, {
      file,
    });
  if (dims[tower] !== undefined && dims[tower] !== out.dims[1])
    throw new LeverError(`output "${io.output}" changed width from ${dims[tower]} to ${out.dims[1]}`, { file });
  dims[tower] = out.dims[1];
  return out.data;
}

/** The ClipTowers of what is (being) loaded. */
function towersApi(loaded: LoadedTowers): ClipTowers {
  return {
    dims: loaded.dims,
    async prepareImages(paths) {
      const decoded = await Promise.all(paths.map((path) => loaded.decode!(path)));
      const ok: number[] = [];
      const images: RgbImage[] = [];
      const failed: PreparedImages["failed"] = [];
      decoded.forEach((result, index) => {
        if ("image" in result) {
          ok.push(index);
          images.push(result.image);
        } else {
          const source = paths[index];
          failed.push({ index, path: typeof source === "string" ? source : "(image bytes)", ...result });
        }
      });
      if (images.length === 0) return { ok, failed };
      return { ok, failed, pixels: await loaded.toPixels!(images) };
    },
    async embedImages(prepared) {
      if (prepared.ok.length === 0) return new Float32Array(0);
      return runTower(loaded, "image", { pixel_values: prepared.pixels }, prepared.ok.length);
    },
    async embedTexts(texts) {
      if (texts.length === 0) return new Float32Array(0);
      return runTower(loaded, "text", loaded.tokenize!(texts), texts.length);
    },
    async dispose() {
      for (const runner of Object.values(loaded.runners)) await runner?.dispose();
    },
  };
}

/**
 * input_ids and attention_mask (int64 [batch, longest]) of tokenised texts: sequences longer than
 * `maxLength` keep their first maxLength − 1 tokens and their last (end-of-text) token.
 */
function textInputs(
  hf: Library,
  sequences: readonly number[][],
  maxLength: number,
  padId: number,
): { input_ids: unknown; attention_mask: unknown } {
  const cut = sequences.map((ids) => (ids.length > maxLength ? [...ids.slice(0, maxLength - 1), ids.at(-1)!] : ids));
  const width = Math.max(...cut.map((ids) => ids.length));
  const ids = new BigInt64Array(cut.length * width).fill(BigInt(padId));
  const mask = new BigInt64Array(cut.length * width);
  cut.forEach((row, b) => {
    row.forEach((id, s) => {
      ids[b * width + s] = BigInt(id);
      mask[b * width + s] = 1n;
    });
  });
  const dims = [cut.length, width];
  return { input_ids: new hf.Tensor("int64", ids, dims), attention_mask: new hf.Tensor("int64", mask, dims) };
}

type Decoded = { image: RgbImage } | { reason: "missing" | "unreadable"; message: string };

/**
 * Reads one image file, decodes it with sharp (EXIF orientation applied, converted to sRGB, alpha
 * dropped: Pillow's `convert("RGB")` after `exif_transpose`) and resizes it; never throws.
 */
async function decodeImage(
  sharp: (input: Buffer) => Sharp,
  source: string | Uint8Array,
  resize: (image: RgbImage) => Promise<RgbImage>,
): Promise<Decoded> {
  let bytes: Buffer;
  try {
    bytes =
      typeof source === "string"
        ? await readFile(source)
        : Buffer.from(source.buffer, source.byteOffset, source.length);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT"
      ? { reason: "missing", message: "image file not found" }
      : { reason: "unreadable", message: `cannot read image file (${(error as Error).message})` };
  }
  let decoded: RgbImage;
  try {
    const { data, info } = await sharp(bytes)
      .rotate()
      .toColourspace("srgb")
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    decoded = { data, width: info.width, height: info.height };
  } catch (error) {
    return { reason: "unreadable", message: `cannot decode image (${(error as Error).message})` };
  }
  try {
    return { image: await resize(decoded) };
  } catch (error) {
    return { reason: "unreadable", message: `cannot resize image (${(error as Error).message})` };
  }
}

/** Runs a library call, turning its errors into a LeverError naming `file`. */
async function libraryCall<T>(fn: () => Promise<T> | T, file: string): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof LeverError) throw error;
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
    throw new LeverError(`the CLIP model failed to load or run: ${message}`, { file });
  }
}
