import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { LeverError } from "./errors.js";
import { systemError } from "./files.js";

/**
 * Writes a file so that readers see either the old content or the complete new content, never a
 * prefix: write to a temp file beside it, fsync, rename over the target. Any failure (a full disk,
 * a directory where the file should go, no permission) removes the temp file and is a LeverError
 * naming the target path.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array | Uint8Array[]): void {
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}`;
  let fd: number | null = null;
  try {
    mkdirSync(dirname(path), { recursive: true });
    fd = openSync(tmp, "w");
    const parts = Array.isArray(data) ? data : [data];
    for (const part of parts) {
      const bytes = typeof part === "string" ? Buffer.from(part, "utf8") : part;
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    }
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(tmp, path);
  } catch (error) {
    try {
      if (fd !== null) closeSync(fd);
      rmSync(tmp, { force: true });
    } catch {
      // Nothing was created (e.g. the parent is a file): the first error is the one to report.
    }
    throw systemError(error, path);
  }
}

/**
 * `writeFileAtomic` for a file the user named (`--out` of an export or a report): an existing file
 * with the same content is left as it is, one with other content is only overwritten with `replace`
 * (`--replace`), never silently.
 */
export function writeUserFile(path: string, data: string, options: { replace?: boolean } = {}): void {
  if (existsSync(path)) {
    let same = false;
    try {
      same = readFileSync(path).equals(Buffer.from(data, "utf8"));
    } catch (error) {
      throw systemError(error, path);
    }
    if (same) return;
    if (options.replace !== true)
      throw new LeverError("file exists with other content (pass --replace to overwrite it)", {
        file: path,
      });
  }
  writeFileAtomic(path, data);
}
