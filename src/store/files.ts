import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { isAbsolute, join, normalize, resolve, sep } from "node:path";
import { LeverError } from "../util/errors.js";
import { pathInside } from "../util/files.js";
import { redactUrlPasswords } from "../util/redact.js";

/**
 * Resolves a path relative to the artifacts folder, refusing anything that would escape it
 * (absolute paths, ".." segments), so artefact records stay portable with the workspace.
 */
export function resolveInside(root: string, relativePath: string): string {
  if (relativePath.length === 0 || isAbsolute(relativePath)) {
    throw new LeverError(`artefact path must be relative to the artifacts folder, got "${relativePath}"`, {
      field: "path",
    });
  }
  const full = resolve(root, normalize(relativePath));
  if (pathInside(root, full) === null) {
    throw new LeverError(`artefact path "${relativePath}" leaves the artifacts folder`, { field: "path" });
  }
  return full;
}

/** The stored form of an artefact path: relative with "/" separators when under root, else absolute. */
export function portablePath(root: string, path: string): string {
  const full = isAbsolute(path) ? path : join(root, path);
  const rel = pathInside(root, full);
  return rel !== null ? rel.split(sep).join("/") : full;
}

/**
 * Paths inside the workspace are stored workspace-relative, so a moved workspace finds its files and
 * keeps its identities: `<workspace>/experiments/data/x1/world.json` in the database, in run configs
 * (and so in their config hashes), in stage records and in selector retriever ids. In memory every
 * path is absolute again (`fromStored`). Paths outside the workspace (a COCO folder) stay absolute.
 */
export const WORKSPACE_MARK = "<workspace>";

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The pattern of `toStored` for the last root it was used with (a process works in one workspace). */
let lastPattern: { root: string; pattern: RegExp } | null = null;

function rootPattern(root: string): RegExp {
  if (lastPattern?.root !== root)
    lastPattern = {
      root,
      pattern: new RegExp(`(^|[^\\w./~-])${escapeRegExp(root)}(?=${escapeRegExp(sep)}|$)`, "g"),
    };
  return lastPattern.pattern;
}

/** `text` with every absolute path inside `root` (at the start, or after a non-path character such as `:`) marked. */
export function toStored(root: string, text: string): string {
  if (!text.includes(root)) return text;
  // String.replace with a global pattern starts at 0 and resets lastIndex, so the pattern can be reused.
  return text.replace(rootPattern(root), (_m, before: string) => `${before}${WORKSPACE_MARK}`);
}

/** The inverse of `toStored`: every marked path resolved under `root` (unmarked text is returned as it is). */
export function fromStored(root: string, text: string): string {
  return text.includes(WORKSPACE_MARK) ? text.split(WORKSPACE_MARK).join(root) : text;
}

/** A JSON-like value with `toStored` (or `fromStored`) applied to every string in it, keys left alone. */
export function mapStrings<T>(value: T, fn: (text: string) => string): T {
  if (typeof value === "string") return fn(value) as T;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn)) as T;
  if (value !== null && typeof value === "object" && !ArrayBuffer.isView(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, fn)])) as T;
  return value;
}

/**
 * The stored form of a value (run configs, dataset records, stage records): every path inside `root`
 * marked workspace-relative (`toStored`), every password in a URL replaced by `***` (src/util/redact.ts).
 */
export function storedForm<T>(root: string, value: T): T {
  return mapStrings(value, (text) => redactUrlPasswords(toStored(root, text)));
}

/** sha256 and size of a file, read in chunks (synchronous: used inside stage bookkeeping). */
export function hashFileSync(path: string): { sha256: string; bytes: number } {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  const chunk = Buffer.allocUnsafe(1 << 20);
  let bytes = 0;
  try {
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      hash.update(chunk.subarray(0, n));
      bytes += n;
    }
  } finally {
    closeSync(fd);
  }
  return { sha256: hash.digest("hex"), bytes };
}

/** How much of each end of a file `fingerprintFileSync` hashes. */
const FINGERPRINT_SPAN = 1 << 16;

/**
 * A cheap identity of a file: its size and a sha256 over its first and last 64 KiB (the whole file when
 * smaller) — enough to notice a file deleted, truncated, replaced or rewritten, without reading a large
 * checkpoint or embedding matrix whole.
 */
export function fingerprintFileSync(path: string): { bytes: number; head: string } {
  const fd = openSync(path, "r");
  try {
    const bytes = fstatSync(fd).size;
    const hash = createHash("sha256");
    const read = (position: number, length: number) => {
      const chunk = Buffer.alloc(length);
      hash.update(chunk.subarray(0, readSync(fd, chunk, 0, length, position)));
    };
    if (bytes <= 2 * FINGERPRINT_SPAN) read(0, bytes);
    else {
      read(0, FINGERPRINT_SPAN);
      read(bytes - FINGERPRINT_SPAN, FINGERPRINT_SPAN);
    }
    return { bytes, head: hash.digest("hex") };
  } finally {
    closeSync(fd);
  }
}

/** sha256 of in-memory data in the shapes `writeFileAtomic` accepts. */
export function hashData(data: string | Uint8Array | Uint8Array[]): string {
  const hash = createHash("sha256");
  for (const part of Array.isArray(data) ? data : [data]) hash.update(part);
  return hash.digest("hex");
}
