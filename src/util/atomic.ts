import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
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
