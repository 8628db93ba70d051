import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh temporary folder and a function that writes an experiment file into it, returning its path. */
export function experimentFiles(prefix: string): { dir: string; write: (name: string, text: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    write: (name, text) => {
      const file = join(dir, name);
      writeFileSync(file, text);
      return file;
    },
  };
}
