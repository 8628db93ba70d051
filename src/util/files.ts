/**
 * Reading user files with errors a user can act on: a missing file, a directory given where a file
 * is expected, permission denied, a disk that is full or read-only, a file too large to hold as one
 * string, invalid UTF-8 (with the byte offset) and malformed JSON all become one-line `LeverError`s
 * naming the path, never a stack trace. `userError` does the same for any error that reaches the
 * CLI (SQLite's busy / read-only / full included), so none of them prints a stack trace.
 */
import { readFileSync } from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { LeverError } from "./errors.js";

const SYSTEM_ERRORS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "is a directory, not a file",
  ENOTDIR: "a parent of this path is not a directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOSPC: "no space left on the device",
  EROFS: "read-only file system",
  EMFILE: "too many open files",
  ENAMETOOLONG: "file name too long",
  EEXIST: "already exists",
  ENOTEMPTY: "directory is not empty",
  EBUSY: "resource busy",
  EXDEV: "cannot move across file systems",
  EIO: "input/output error",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file too large",
  // Node's own limits on one buffer / one string (a 600 MB JSON file is read as one string).
  ERR_FS_FILE_TOO_LARGE: "file is too large to read at once (over 2 GiB)",
  ERR_STRING_TOO_LONG: "file is too large to hold as one string (over 512 MiB of text)",
};

/** What a write to a workspace that cannot be written says. */
export const READ_ONLY_WORKSPACE =
  "the workspace is read-only (no write permission, or a read-only disk): this command writes to it; " +
  "commands that only read (data list, data inspect, cache stats) still work";

/** SQLite result codes (better-sqlite3's `SqliteError.code`, extended codes by their primary part). */
const SQLITE_ERRORS: Record<string, string> = {
  SQLITE_BUSY: "the database is locked by another process (gave up after waiting); try again when it has finished",
  SQLITE_LOCKED: "the database is locked by another process (gave up after waiting); try again when it has finished",
  SQLITE_READONLY: READ_ONLY_WORKSPACE,
  SQLITE_FULL: "no space left on the device (the database cannot grow)",
  SQLITE_IOERR: "input/output error on the database",
  SQLITE_CANTOPEN: "cannot open the database file",
  SQLITE_PERM: "permission denied",
  SQLITE_NOTADB: "not a SQLite database",
  SQLITE_CORRUPT: "the database file is damaged",
};

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A system error (ENOENT, EACCES, ENOSPC, a too-long string, …) as a one-line LeverError naming
 * `path` (when known); other errors unchanged.
 */
export function systemError(error: unknown, path?: string): unknown {
  const where = path === undefined ? {} : { file: path };
  const code = errorCode(error);
  if (code !== undefined && SYSTEM_ERRORS[code] !== undefined)
    return new LeverError(`${SYSTEM_ERRORS[code]} (${code})`, where);
  if (error instanceof RangeError && /Invalid string length|Array buffer allocation failed/.test(error.message))
    return new LeverError(`too large to hold in memory (${error.message})`, where);
  return error;
}

/**
 * A SQLite error as a one-line LeverError naming the database `file`: known codes get a message
 * that says what to do, others are prefixed with `context`. Other errors are returned unchanged.
 */
export function sqliteError(error: unknown, file: string | undefined, context?: string): unknown {
  const code = errorCode(error);
  if (error instanceof LeverError || code === undefined || !code.startsWith("SQLITE_")) return error;
  const primary = code.split("_").slice(0, 2).join("_");
  const known = SQLITE_ERRORS[primary];
  const message =
    known !== undefined
      ? `${known} (${code})`
      : `${context ?? "database error"}: ${(error as Error).message} (${code})`;
  return new LeverError(message, file === undefined ? {} : { file });
}

/**
 * Any error as the LeverError a user should see, or undefined for a real bug (shown with its stack).
 * Node system errors name their `path` (the destination, for a failed rename or copy).
 */
export function userError(error: unknown): LeverError | undefined {
  const e = error as { path?: unknown; dest?: unknown } | null;
  const path = typeof e?.dest === "string" ? e.dest : typeof e?.path === "string" ? e.path : undefined;
  const mapped = sqliteError(systemError(error, path), undefined);
  return mapped instanceof LeverError ? mapped : undefined;
}

/** Reads a file's bytes; system errors become LeverErrors naming the path. */
export function readBytes(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw systemError(error, path);
  }
}

/** Decodes UTF-8 strictly (a leading BOM is dropped); invalid bytes are an error naming the byte offset. */
export function decodeUtf8(bytes: Uint8Array, path: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (error) {
    if (!(error instanceof TypeError)) throw systemError(error, path); // too long for one string
    throw new LeverError(`not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(bytes)})`, { file: path });
  }
}

/** Offset of the first byte that does not belong to a valid UTF-8 sequence (bytes.length if none). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const need =
      b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let j = 1; j <= need; j++) {
      const c = bytes[i + j];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      // Overlong 3/4-byte forms, surrogates and code points above U+10FFFF.
      if (
        j === 1 &&
        ((b === 0xe0 && c < 0xa0) || (b === 0xed && c > 0x9f) || (b === 0xf0 && c < 0x90) || (b === 0xf4 && c > 0x8f))
      )
        return i;
    }
    i += need + 1;
  }
  return bytes.length;
}

/** A UTF-8 text file. */
export function readTextFile(path: string): string {
  return decodeUtf8(readBytes(path), path);
}

/** A JSON file; syntax errors name the file and the parser's message. */
export function readJsonFile(path: string): unknown {
  return parseJsonText(readTextFile(path), path);
}

/** `text` (read from `path`) as JSON; syntax errors name the file and the parser's message. */
export function parseJsonText(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
}

/**
 * `path` relative to `root` when it lies strictly inside it (not `root` itself, nothing reached through
 * ".."), else null: the one containment check of artefact paths and rendered image paths.
 */
export function pathInside(root: string, path: string): string | null {
  const rel = relative(root, path);
  return rel.length === 0 || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? null : rel;
}
