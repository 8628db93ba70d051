import { readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root and its src/ folder. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const SRC = join(ROOT, "src");

/** Every .ts file below `dir`, as paths under it. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}
