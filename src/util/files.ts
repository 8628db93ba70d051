/**
 * Reading user files with errors a user can act on: a missing file, a directory given where a file
 * is expected, permission denied, invalid UTF-8 (with the byte offset) and malformed JSON all become
 * one-line `LeverError`s naming the path, never a stack trace.
 */
import { readFileSync } from "node:fs";
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
};

/** A Node system error (ENOENT, EACCES, …) as a one-line LeverError naming `path`; other errors unchanged. */
export function systemError(error: unknown, path: string): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code === "string" && SYSTEM_ERRORS[code] !== undefined)
    return new LeverError(`${SYSTEM_ERRORS[code]} (${code})`, { file: path });
  return error;
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
  } catch {
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
  const text = readTextFile(path);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new LeverError(`not valid JSON (${(error as Error).message})`, { file: path });
  }
}
