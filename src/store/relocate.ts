/**
 * Schema step 4 for workspaces made before paths inside the workspace were stored workspace-relative
 * (src/store/files.ts): rewrites, in place and once, every stored absolute path under the workspace's
 * folder — run configs (their config hashes recomputed, so `lever train …` still finds its runs),
 * datasets' source files and image templates, items' image paths, selector retriever ids of
 * predictions — and the stage records of `lever run`, and replaces URL passwords in run configs by
 * `***`. Afterwards the workspace can be moved. A workspace moved before this step keeps its old,
 * absolute paths (they no longer match its folder) and works only where it was made.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Database } from "better-sqlite3";
import { writeFileAtomic } from "../util/atomic.js";
import { parseJsonText, readTextFile } from "../util/files.js";
import { canonicalJson, hashValue } from "../util/hash.js";
import { storedForm, WORKSPACE_MARK } from "./files.js";

/** Applies step 4 to the database at `file` (its folder is the workspace). */
export function storeWorkspaceRelative(db: Database, file: string): void {
  const root = resolve(dirname(file));
  const stored = <T>(value: T): T => storedForm(root, value);
  for (const row of db.prepare("SELECT id, config FROM runs").all() as { id: string; config: string }[]) {
    const config = stored(JSON.parse(row.config) as unknown);
    const text = canonicalJson(config);
    if (text !== row.config)
      db.prepare("UPDATE runs SET config = ?, config_hash = ? WHERE id = ?").run(text, hashValue(config), row.id);
  }
  for (const row of db.prepare("SELECT name, files, images FROM datasets").all() as DatasetPaths[]) {
    const files = JSON.stringify(stored(JSON.parse(row.files) as unknown));
    const images = row.images === null ? null : stored(row.images);
    if (files !== row.files || images !== row.images)
      db.prepare("UPDATE datasets SET files = ?, images = ? WHERE name = ?").run(files, images, row.name);
  }
  const prefix = `${root}/`;
  db.prepare(
    `UPDATE items SET image_path = @mark || substr(image_path, length(@root) + 1)
     WHERE substr(image_path, 1, length(@prefix)) = @prefix`,
  ).run({ mark: WORKSPACE_MARK, root, prefix });
  const retrievers = db.prepare("SELECT DISTINCT retriever FROM predictions").pluck().all() as string[];
  for (const retriever of retrievers) {
    const now = stored(retriever);
    if (now !== retriever)
      db.prepare("UPDATE OR REPLACE predictions SET retriever = ? WHERE retriever = ?").run(now, retriever);
  }
  storeStageRecords(join(root, "artifacts", "experiments", "stages"), stored);
}

interface DatasetPaths {
  name: string;
  files: string;
  images: string | null;
}

/** `lever run`'s stage records (JSON files), rewritten when they name a path inside the workspace. */
function storeStageRecords(dir: string, stored: <T>(value: T) => T): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".json"))) {
    const path = join(dir, name);
    const text = readTextFile(path);
    const now = `${JSON.stringify(stored(parseJsonText(text, path)), null, 2)}\n`;
    if (now !== text) writeFileAtomic(path, now);
  }
}
