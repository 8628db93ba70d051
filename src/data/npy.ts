/**
 * NumPy `.npy` files (format versions 1.0, 2.0 and 3.0), little-endian, C order.
 *
 * Layout (numpy/lib/format.py): magic "\x93NUMPY", major and minor version bytes, header length
 * (u16 LE for v1, u32 LE for v2/v3), then the header: a Python dict literal
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` padded with spaces and ending in
 * "\n", so that the data starts at a multiple of 64 (16 in files from numpy < 1.14). v1/v2 headers
 * are latin-1, v3 headers UTF-8.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { float16ToFloat32 } from "./float16.js";

/** The dtypes we read. `<f2` is widened to Float32Array on read. */
export type NpyDtype = "<f4" | "<f8" | "<f2" | "|u1" | "<i4" | "<i8";
/** The dtypes we write: each is the exact in-memory layout of one typed array, so writing never converts. */
export type NpyWriteDtype = "<f4" | "<f8" | "|u1" | "<i4" | "<i8";

export type NpyData = Float32Array | Float64Array | Uint8Array | Int32Array | BigInt64Array;

export interface NpyArray {
  /** The dtype stored in the file (before any widening). */
  dtype: NpyDtype;
  shape: number[];
  data: NpyData;
  /** Always false: Fortran-order files are rejected. Kept so callers can assert it. */
  fortranOrder: false;
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
const ALIGN = 64;
const MAX_HEADER = 1 << 20;
/** Bytes a single fs read may move (Node rejects larger lengths). */
const MAX_IO = 1 << 30;

const ITEM_SIZE: Record<NpyDtype, number> = { "<f4": 4, "<f8": 8, "<f2": 2, "|u1": 1, "<i4": 4, "<i8": 8 };

/** Aliases numpy writes for the same little-endian types (`=` and `|` mean native / not applicable). */
const DESCR_ALIASES: Record<string, NpyDtype> = {
  "<f4": "<f4",
  "<f8": "<f8",
  "<f2": "<f2",
  "|u1": "|u1",
  "<u1": "|u1",
  u1: "|u1",
  "<i4": "<i4",
  "<i8": "<i8",
};

interface NpyHeader {
  dtype: NpyDtype;
  shape: number[];
  dataOffset: number;
  dataBytes: number;
}

/** Reads a .npy file (path or bytes). Errors name the file and the header field at fault. */
export function readNpy(source: string | Uint8Array, label?: string): NpyArray {
  const file = label ?? (typeof source === "string" ? source : "<npy bytes>");
  if (typeof source !== "string") {
    const header = parseNpyHeader(source, file);
    checkLength(source.length - header.dataOffset, header, file);
    const bytes = source.subarray(header.dataOffset, header.dataOffset + header.dataBytes);
    return finish(header, decode(header.dtype, bytes));
  }
  const fd = openSync(source, "r");
  try {
    const size = fstatSync(fd).size;
    const prefix = new Uint8Array(Math.min(size, 12));
    readFully(fd, prefix, 0);
    const headerEnd = Math.min(size, npyHeaderLength(prefix, file));
    const head = new Uint8Array(headerEnd);
    readFully(fd, head, 0);
    const header = parseNpyHeader(head, file);
    checkLength(size - header.dataOffset, header, file);
    // Read straight into the final typed array's memory: no intermediate copy of the payload.
    const raw = allocate(header.dtype, header.dataBytes);
    readFully(fd, new Uint8Array(raw.buffer, raw.byteOffset, header.dataBytes), header.dataOffset);
    return finish(header, header.dtype === "<f2" ? float16ToFloat32(raw as Uint16Array) : (raw as NpyData));
  } finally {
    closeSync(fd);
  }
}

/** Writes `data` with `shape` as a v1.0 .npy (v2.0 if the header needs it), atomically. */
export function writeNpy(path: string, data: NpyData, shape: readonly number[], dtype?: NpyWriteDtype): void {
  writeFileAtomic(path, encodeNpy(data, shape, dtype));
}

/** The bytes of a .npy file as chunks (header, then the data in ≤ 1 GiB views), without copying data. */
export function encodeNpy(data: NpyData, shape: readonly number[], dtype?: NpyWriteDtype): Uint8Array[] {
  const descr = dtype ?? dtypeOf(data);
  if (descr !== dtypeOf(data)) throw new LeverError(`data is a ${data.constructor.name}, which is not ${descr}`);
  for (const n of shape) {
    if (!Number.isSafeInteger(n) || n < 0) throw new LeverError(`shape ${JSON.stringify(shape)} is not valid`);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== data.length)
    throw new LeverError(`shape ${JSON.stringify(shape)} holds ${count} values but the data has ${data.length}`);
  const chunks = [encodeNpyHeader(descr, shape)];
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  for (let offset = 0; offset < bytes.length; offset += MAX_IO) chunks.push(bytes.subarray(offset, offset + MAX_IO));
  return chunks;
}

/**
 * The header (magic through "\n") numpy (≥ 1.22) writes, for streaming writers that produce the data
 * themselves: keys sorted, shape as a Python tuple, room for 21 digits of
 * growth on the first axis, padded with spaces to a multiple of 64 and ended by "\n".
 */
export function encodeNpyHeader(descr: NpyWriteDtype, shape: readonly number[]): Uint8Array {
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${tuple}, }`;
  if (shape.length > 0) dict += " ".repeat(21 - String(shape[0]).length);
  for (const [major, lengthBytes] of [
    [1, 2],
    [2, 4],
  ] as const) {
    const unpadded = MAGIC.length + 2 + lengthBytes + dict.length + 1;
    const padded = Math.ceil(unpadded / ALIGN) * ALIGN;
    const headerLength = padded - MAGIC.length - 2 - lengthBytes;
    if (major === 1 && headerLength > 0xffff) continue;
    const out = new Uint8Array(padded);
    out.set(MAGIC, 0);
    out[6] = major;
    out[7] = 0;
    const view = new DataView(out.buffer);
    if (lengthBytes === 2) view.setUint16(8, headerLength, true);
    else view.setUint32(8, headerLength, true);
    const text = `${dict}${" ".repeat(padded - unpadded)}\n`;
    out.set(Buffer.from(text, "latin1"), MAGIC.length + 2 + lengthBytes);
    return out;
  }
  throw new LeverError(`shape ${JSON.stringify(shape)} makes a header too long for .npy`);
}

function dtypeOf(data: NpyData): NpyWriteDtype {
  if (data instanceof Float32Array) return "<f4";
  if (data instanceof Float64Array) return "<f8";
  if (data instanceof Uint8Array) return "|u1";
  if (data instanceof Int32Array) return "<i4";
  return "<i8";
}

/** Total header size (magic + version + length field + header text), from the first 12 bytes. */
function npyHeaderLength(prefix: Uint8Array, file: string): number {
  for (let i = 0; i < MAGIC.length; i++) {
    if (prefix[i] !== MAGIC[i]) throw new LeverError("not a .npy file (missing the \\x93NUMPY magic)", { file });
  }
  if (prefix.length < 10) throw new LeverError("truncated .npy header", { file });
  const major = prefix[6];
  if (prefix[7] !== 0)
    throw new LeverError(`unsupported .npy format version ${major}.${prefix[7]} (expected 1.0, 2.0 or 3.0)`, { file });
  const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  if (major === 1) return 10 + view.getUint16(8, true);
  if (major === 2 || major === 3) {
    if (prefix.length < 12) throw new LeverError("truncated .npy header", { file });
    const length = view.getUint32(8, true);
    // Only structured dtypes need long headers; ours are < 200 bytes. The cap stops absurd reads.
    if (length > MAX_HEADER) throw new LeverError(`header length ${length} is implausibly large`, { file });
    return 12 + length;
  }
  throw new LeverError(`unsupported .npy format version ${major}.${prefix[7]} (expected 1.0, 2.0 or 3.0)`, { file });
}

function parseNpyHeader(bytes: Uint8Array, file: string): NpyHeader {
  const dataOffset = npyHeaderLength(bytes, file);
  if (bytes.length < dataOffset)
    throw new LeverError(`truncated .npy header (needs ${dataOffset} bytes, file has ${bytes.length})`, { file });
  const start = bytes[6] === 1 ? 10 : 12;
  const text = Buffer.from(bytes.subarray(start, dataOffset)).toString(bytes[6] === 3 ? "utf8" : "latin1");
  const dict = parsePythonDict(text, file);
  const keys = Object.keys(dict).sort().join(",");
  if (keys !== "descr,fortran_order,shape")
    throw new LeverError(`header keys are {${keys}}, expected exactly descr, fortran_order, shape`, {
      file,
      field: "header",
    });
  const { descr, fortran_order: fortran, shape } = dict;
  if (typeof descr !== "string")
    throw new LeverError("descr must be a dtype string (structured dtypes are not supported)", {
      file,
      field: "descr",
    });
  if (descr.startsWith(">"))
    throw new LeverError(`big-endian dtype '${descr}' is not supported; save with '<' byte order`, {
      file,
      field: "descr",
    });
  const dtype = DESCR_ALIASES[descr];
  if (dtype === undefined)
    throw new LeverError(`unsupported dtype '${descr}' (supported: <f4, <f8, <f2, |u1, <i4, <i8)`, {
      file,
      field: "descr",
    });
  if (typeof fortran !== "boolean") throw new LeverError("must be True or False", { file, field: "fortran_order" });
  if (!Array.isArray(shape)) throw new LeverError("must be a tuple of integers", { file, field: "shape" });
  // A Fortran-ordered array with at most one axis longer than 1 has the same bytes as C order.
  if (fortran && shape.filter((n) => n > 1).length > 1)
    throw new LeverError("Fortran-ordered arrays are not supported; save a C-contiguous array", {
      file,
      field: "fortran_order",
    });
  const count = shape.reduce((a, b) => a * b, 1);
  return { dtype, shape, dataOffset, dataBytes: count * ITEM_SIZE[dtype] };
}

function checkLength(available: number, header: NpyHeader, file: string): void {
  if (available !== header.dataBytes)
    throw new LeverError(
      `data is ${available} bytes but shape (${header.shape.join(", ")}) of ${header.dtype} needs ${header.dataBytes}`,
      { file, field: "shape" },
    );
}

type PyValue = string | boolean | number[];

/**
 * Parses the header's dict literal strictly: string keys, and values that are a quoted string,
 * True/False, or a tuple of non-negative integers (`()`, `(5,)`, `(5, 3)`); a trailing comma and
 * trailing spaces are allowed. Anything else is an error, never an eval.
 */
function parsePythonDict(text: string, file: string): Record<string, PyValue> {
  let i = 0;
  const fail = (what: string): never => {
    throw new LeverError(`malformed header at character ${i}: ${what} in ${JSON.stringify(text.trim())}`, {
      file,
      field: "header",
    });
  };
  const skipSpace = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t")) i++;
  };
  const expect = (ch: string) => {
    skipSpace();
    if (text[i] !== ch) fail(`expected '${ch}'`);
    i++;
  };
  const parseString = (): string => {
    skipSpace();
    const quote = text[i];
    if (quote !== "'" && quote !== '"') fail("expected a quoted string");
    const end = text.indexOf(quote, i + 1);
    if (end < 0) fail("unterminated string");
    const value = text.slice(i + 1, end);
    if (value.includes("\\")) fail("escapes in strings are not supported");
    i = end + 1;
    return value;
  };
  const parseValue = (): PyValue => {
    skipSpace();
    for (const [word, value] of [
      ["True", true],
      ["False", false],
    ] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
    }
    if (text[i] === "'" || text[i] === '"') return parseString();
    if (text[i] !== "(") return fail("expected a string, True, False or a tuple");
    i++;
    const items: number[] = [];
    let trailingComma = false;
    for (;;) {
      skipSpace();
      if (text[i] === ")") {
        i++;
        break;
      }
      const match = /^\d+L?/.exec(text.slice(i));
      if (match === null) return fail("expected a non-negative integer in the shape tuple");
      items.push(Number(match[0].replace("L", "")));
      i += match[0].length;
      skipSpace();
      trailingComma = text[i] === ",";
      if (trailingComma) i++;
      else if (text[i] !== ")") fail("expected ',' or ')' in the shape tuple");
    }
    // Python needs "(5,)" for a one-element tuple; "(5)" is just the number 5.
    if (items.length === 1 && !trailingComma) fail("a one-element shape must be written (n,)");
    if (items.some((n) => !Number.isSafeInteger(n))) fail("shape dimension too large");
    return items;
  };

  const out: Record<string, PyValue> = {};
  expect("{");
  for (;;) {
    skipSpace();
    if (text[i] === "}") {
      i++;
      break;
    }
    const key = parseString();
    if (key in out) fail(`duplicate key '${key}'`);
    expect(":");
    out[key] = parseValue();
    skipSpace();
    if (text[i] === ",") i++;
    else if (text[i] !== "}") fail("expected ',' or '}'");
  }
  if (text.slice(i).trim() !== "") fail("unexpected text after the dict");
  if (!text.endsWith("\n")) fail("header must end with a newline");
  return out;
}

function allocate(dtype: NpyDtype, bytes: number): NpyData | Uint16Array {
  const n = bytes / ITEM_SIZE[dtype];
  switch (dtype) {
    case "<f4":
      return new Float32Array(n);
    case "<f8":
      return new Float64Array(n);
    case "<f2":
      return new Uint16Array(n);
    case "|u1":
      return new Uint8Array(n);
    case "<i4":
      return new Int32Array(n);
    case "<i8":
      return new BigInt64Array(n);
  }
}

/** Copies `bytes` into fresh, aligned memory of type `dtype` (the source may be misaligned or shared). */
function decode(dtype: NpyDtype, bytes: Uint8Array): NpyData {
  const target = allocate(dtype, bytes.length);
  new Uint8Array(target.buffer).set(bytes);
  return dtype === "<f2" ? float16ToFloat32(target as Uint16Array) : (target as NpyData);
}

function finish(header: NpyHeader, data: NpyData): NpyArray {
  return { dtype: header.dtype, shape: header.shape, data, fortranOrder: false };
}

/** Reads exactly `target.length` bytes at `position`, in ≤ 1 GiB steps (Node's per-call limit is 2 GiB). */
export function readFully(fd: number, target: Uint8Array, position: number): void {
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(MAX_IO, target.length - done), position + done);
    if (n === 0) throw new LeverError(`unexpected end of file after ${position + done} bytes`);
    done += n;
  }
}
