import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Writes a file so that readers see either the old content or the complete new content, never a
 * prefix: write to a temp file beside it, fsync, rename over the target.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array | Uint8Array[]): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}`;
  const fd = openSync(tmp, "w");
  try {
    const parts = Array.isArray(data) ? data : [data];
    for (const part of parts) {
      const bytes = typeof part === "string" ? Buffer.from(part, "utf8") : part;
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    }
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(tmp, path);
}
