/**
 * `.safetensors` files (huggingface/safetensors): an 8-byte little-endian header length N, N bytes
 * of UTF-8 JSON `{"__metadata__": {str: str}, "<name>": {"dtype", "shape", "data_offsets": [begin, end]}}`
 * padded with spaces to a multiple of 8, then the tensor bytes, little-endian, C order. Offsets are
 * relative to the end of the header and must tile the data region exactly (no holes, no overlap).
 *
 * The writer reproduces the reference serializer (`safetensors/src/tensor.rs: prepare`): tensors
 * sorted by descending dtype alignment, then by name; header JSON `{"__metadata__":…,"name":
 * {"dtype":…,"shape":…,"data_offsets":[…]}}` without spaces; padding with spaces to 8 bytes.
 */
import { closeSync, fstatSync, openSync } from "node:fs";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { bfloat16ToFloat32, float16ToFloat32, float32ToBfloat16, float32ToFloat16 } from "./float16.js";
import { readFully } from "./npy.js";

export type SafetensorsDtype = "F64" | "F32" | "F16" | "BF16" | "I64" | "I32" | "U8" | "BOOL";

/** F16/BF16 are widened to Float32Array on read; BOOL is one byte per value. */
export type TensorData = Float32Array | Float64Array | BigInt64Array | Int32Array | Uint8Array;

export interface Tensor {
  /** The dtype in the file (F16/BF16 data is held as Float32Array). */
  dtype: SafetensorsDtype;
  shape: number[];
  data: TensorData;
}

export interface SafetensorsFile {
  /** In file (offset) order. */
  tensors: Map<string, Tensor>;
  metadata: Record<string, string>;
}

const ITEM_SIZE: Record<SafetensorsDtype, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, U8: 1, BOOL: 1 };

/** Rank of each dtype in the reference `Dtype` enum (declared in increasing alignment). */
const DTYPE_RANK: Record<SafetensorsDtype, number> = {
  BOOL: 0,
  U8: 1,
  F16: 7,
  BF16: 8,
  I32: 9,
  F32: 11,
  F64: 12,
  I64: 13,
};

/** The reference reader's limit (`MAX_HEADER_SIZE`). */
const MAX_HEADER = 100_000_000;

interface Entry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

interface ParsedHeader {
  entries: Entry[];
  metadata: Record<string, string>;
  /** Absolute file offset where tensor data begins (8 + N). */
  dataStart: number;
}

/** Reads every tensor. From a path, each tensor is read straight into its own array (no whole-file buffer). */
export function readSafetensors(source: string | Uint8Array, label?: string): SafetensorsFile {
  const file = label ?? (typeof source === "string" ? source : "<safetensors bytes>");
  if (typeof source !== "string") {
    const header = parseHeader(source, source.length, file);
    const tensors = new Map<string, Tensor>();
    for (const entry of header.entries) {
      const bytes = source.subarray(header.dataStart + entry.begin, header.dataStart + entry.end);
      tensors.set(entry.name, { dtype: entry.dtype, shape: entry.shape, data: decode(entry.dtype, bytes) });
    }
    return { tensors, metadata: header.metadata };
  }
  const reader = openSafetensors(source);
  try {
    const tensors = new Map<string, Tensor>();
    for (const name of reader.names) tensors.set(name, reader.read(name));
    return { tensors, metadata: reader.metadata };
  } finally {
    reader.close();
  }
}

/** Lazy access to a large file: the header is parsed and validated once, tensors are read on demand. */
export interface SafetensorsReader {
  /** Tensor names in file (offset) order. */
  names: string[];
  metadata: Record<string, string>;
  info(name: string): { dtype: SafetensorsDtype; shape: number[] };
  read(name: string): Tensor;
  close(): void;
}

export function openSafetensors(path: string): SafetensorsReader {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const lengthBytes = new Uint8Array(Math.min(8, size));
    readFully(fd, lengthBytes, 0);
    const headerLength = readHeaderLength(lengthBytes, size, path);
    const head = new Uint8Array(8 + headerLength);
    readFully(fd, head, 0);
    const header = parseHeader(head, size, path);
    const byName = new Map(header.entries.map((e) => [e.name, e]));
    const lookup = (name: string): Entry => {
      const entry = byName.get(name);
      if (entry === undefined) throw new LeverError(`no tensor named "${name}"`, { file: path });
      return entry;
    };
    let open = true;
    return {
      names: header.entries.map((e) => e.name),
      metadata: header.metadata,
      info: (name) => {
        const { dtype, shape } = lookup(name);
        return { dtype, shape };
      },
      read: (name) => {
        if (!open) throw new LeverError("reader is closed", { file: path });
        const entry = lookup(name);
        const raw = allocate(entry.dtype, entry.end - entry.begin);
        readFully(fd, new Uint8Array(raw.buffer, 0, entry.end - entry.begin), header.dataStart + entry.begin);
        return { dtype: entry.dtype, shape: entry.shape, data: widen(entry.dtype, raw) };
      },
      close: () => {
        if (open) closeSync(fd);
        open = false;
      },
    };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

export interface TensorToWrite {
  dtype: SafetensorsDtype;
  shape: readonly number[];
  /**
   * Float data may be narrowed to F16/BF16 (round to nearest even, via float32 for Float64Array
   * input); other dtypes must match the array type exactly.
   */
  data: TensorData | Float32Array;
}

/** Writes tensors + string metadata atomically, laid out exactly as the reference serializer does. */
export function writeSafetensors(
  path: string,
  tensors: Record<string, TensorToWrite>,
  metadata?: Record<string, string>,
): void {
  writeFileAtomic(path, encodeSafetensors(tensors, metadata));
}

/** The file as chunks: 8-byte length, padded header, then each tensor's bytes (views, no copies for exact dtypes). */
export function encodeSafetensors(
  tensors: Record<string, TensorToWrite>,
  metadata?: Record<string, string>,
): Uint8Array[] {
  const names = Object.keys(tensors).sort((a, b) => {
    const byDtype = DTYPE_RANK[tensors[b].dtype] - DTYPE_RANK[tensors[a].dtype];
    return byDtype !== 0 ? byDtype : a < b ? -1 : a > b ? 1 : 0;
  });
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    // Sorted keys, so the same metadata always gives the same bytes (the reference uses a HashMap).
    const sorted: Record<string, string> = {};
    for (const key of Object.keys(metadata).sort()) {
      if (typeof metadata[key] !== "string")
        throw new LeverError(`metadata values must be strings, "${key}" is ${typeof metadata[key]}`);
      sorted[key] = metadata[key];
    }
    header.__metadata__ = sorted;
  }
  const payloads: Uint8Array[] = [];
  let offset = 0;
  for (const name of names) {
    if (name === "__metadata__") throw new LeverError('"__metadata__" is reserved and cannot name a tensor');
    const bytes = encodeTensor(name, tensors[name]);
    header[name] = {
      dtype: tensors[name].dtype,
      shape: [...tensors[name].shape],
      data_offsets: [offset, offset + bytes.length],
    };
    offset += bytes.length;
    payloads.push(bytes);
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (Buffer.byteLength(json, "utf8") % 8)) % 8);
  const headerBytes = Buffer.from(json, "utf8");
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  return [prefix, headerBytes, ...payloads];
}

function encodeTensor(name: string, tensor: TensorToWrite): Uint8Array {
  const { dtype, shape, data } = tensor;
  if (!(dtype in ITEM_SIZE)) throw new LeverError(`tensor "${name}": unsupported dtype ${String(dtype)}`);
  for (const n of shape) {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new LeverError(`tensor "${name}": invalid shape ${JSON.stringify(shape)}`);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  if (data.length !== count)
    throw new LeverError(
      `tensor "${name}": shape ${JSON.stringify(shape)} holds ${count} values, data has ${data.length}`,
    );
  let typed: ArrayBufferView;
  if ((dtype === "F16" || dtype === "BF16") && (data instanceof Float32Array || data instanceof Float64Array))
    typed = dtype === "F16" ? float32ToFloat16(data) : float32ToBfloat16(data);
  else if (ARRAY_OF[dtype](data)) typed = data;
  else throw new LeverError(`tensor "${name}": a ${data.constructor.name} cannot be written as ${dtype}`);
  return new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
}

const ARRAY_OF: Record<SafetensorsDtype, (data: unknown) => boolean> = {
  F64: (d) => d instanceof Float64Array,
  F32: (d) => d instanceof Float32Array,
  F16: () => false,
  BF16: () => false,
  I64: (d) => d instanceof BigInt64Array,
  I32: (d) => d instanceof Int32Array,
  U8: (d) => d instanceof Uint8Array,
  BOOL: (d) => d instanceof Uint8Array,
};

function readHeaderLength(bytes: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < 8 || bytes.length < 8)
    throw new LeverError(`file is ${fileSize} bytes, too short for a safetensors header`, { file });
  const length = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (length > BigInt(MAX_HEADER))
    throw new LeverError(`header length ${length} exceeds the ${MAX_HEADER}-byte limit`, { file, field: "header" });
  if (Number(length) + 8 > fileSize)
    throw new LeverError(`header length ${length} runs past the end of the ${fileSize}-byte file`, {
      file,
      field: "header",
    });
  return Number(length);
}

/** Parses and validates the header against the total file size. `bytes` holds at least 8 + N bytes. */
function parseHeader(bytes: Uint8Array, fileSize: number, file: string): ParsedHeader {
  const length = readHeaderLength(bytes, fileSize, file);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + length));
  } catch {
    throw new LeverError("header is not valid UTF-8", { file, field: "header" });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new LeverError(`header is not valid JSON (${(error as Error).message})`, { file, field: "header" });
  }
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new LeverError("header must be a JSON object", { file, field: "header" });

  let metadata: Record<string, string> = {};
  const entries: Entry[] = [];
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = parseMetadata(value, file);
      continue;
    }
    entries.push(parseEntry(name, value, file));
  }
  // Offsets must tile [0, data size) exactly, in some order (the reference sorts by offset too).
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expected = 0;
  for (const entry of entries) {
    if (entry.begin !== expected)
      throw new LeverError(
        entry.begin > expected
          ? `data_offsets start at ${entry.begin}, leaving a hole after byte ${expected}`
          : `data_offsets start at ${entry.begin}, overlapping the tensor that ends at ${expected}`,
        { file, record: entry.name, field: "data_offsets" },
      );
    expected = entry.end;
  }
  const dataSize = fileSize - 8 - length;
  if (expected !== dataSize)
    throw new LeverError(`tensors cover ${expected} bytes but the file holds ${dataSize} bytes of data`, {
      file,
      field: "data_offsets",
    });
  return { entries, metadata, dataStart: 8 + length };
}

function parseMetadata(value: unknown, file: string): Record<string, string> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new LeverError("must be an object of strings", { file, field: "__metadata__" });
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== "string")
      throw new LeverError(`value must be a string, got ${JSON.stringify(v)}`, { file, field: `__metadata__.${key}` });
  }
  return value as Record<string, string>;
}

function parseEntry(name: string, value: unknown, file: string): Entry {
  const where = { file, record: name };
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new LeverError("tensor info must be an object", where);
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (typeof dtype !== "string" || !(dtype in ITEM_SIZE))
    throw new LeverError(
      `unsupported dtype ${JSON.stringify(dtype)} (supported: ${Object.keys(ITEM_SIZE).join(", ")})`,
      {
        ...where,
        field: "dtype",
      },
    );
  if (!Array.isArray(shape) || !shape.every((n) => Number.isSafeInteger(n) && n >= 0))
    throw new LeverError(`must be a list of non-negative integers, got ${JSON.stringify(shape)}`, {
      ...where,
      field: "shape",
    });
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((n) => Number.isSafeInteger(n) && n >= 0) ||
    offsets[1] < offsets[0]
  )
    throw new LeverError(`must be [begin, end] with 0 ≤ begin ≤ end, got ${JSON.stringify(offsets)}`, {
      ...where,
      field: "data_offsets",
    });
  const size = ITEM_SIZE[dtype as SafetensorsDtype];
  const needed = (shape as number[]).reduce((a, b) => a * b, 1) * size;
  if (offsets[1] - offsets[0] !== needed)
    throw new LeverError(
      `covers ${offsets[1] - offsets[0]} bytes but shape ${JSON.stringify(shape)} of ${dtype} needs ${needed}`,
      { ...where, field: "data_offsets" },
    );
  return { name, dtype: dtype as SafetensorsDtype, shape: shape as number[], begin: offsets[0], end: offsets[1] };
}

function allocate(dtype: SafetensorsDtype, bytes: number): TensorData | Uint16Array {
  const n = bytes / ITEM_SIZE[dtype];
  switch (dtype) {
    case "F64":
      return new Float64Array(n);
    case "F32":
      return new Float32Array(n);
    case "F16":
    case "BF16":
      return new Uint16Array(n);
    case "I64":
      return new BigInt64Array(n);
    case "I32":
      return new Int32Array(n);
    case "U8":
    case "BOOL":
      return new Uint8Array(n);
  }
}

function widen(dtype: SafetensorsDtype, raw: TensorData | Uint16Array): TensorData {
  if (dtype === "F16") return float16ToFloat32(raw as Uint16Array);
  if (dtype === "BF16") return bfloat16ToFloat32(raw as Uint16Array);
  return raw as TensorData;
}

/** Copies `bytes` into fresh, aligned memory of the right type (the source may be misaligned or shared). */
function decode(dtype: SafetensorsDtype, bytes: Uint8Array): TensorData {
  const raw = allocate(dtype, bytes.length);
  new Uint8Array(raw.buffer).set(bytes);
  return widen(dtype, raw);
}
