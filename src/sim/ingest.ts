/**
 * Imports one split of a synthetic world folder (`lever data synth`, src/sim/synth.ts) into a
 * workspace as an ordinary dataset: its questions, annotations and images, and the three embeddings.
 * What the workspace already has under that name is kept (a rerun imports nothing twice). A folder
 * written without images (`lever data synth --no-images`) is imported without an image root.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { importEmbedding } from "../store/ingest/embeddings.js";
import { importVqa } from "../store/ingest/vqa.js";
import type { Workspace } from "../store/workspace.js";
import { annotationsFileName, embeddingFileName, IMAGES_DIR, questionsFileName } from "./synth.js";
import type { Split } from "./world.js";

export function importSynthSplit(ws: Workspace, dir: string, split: Split, name: string = split): void {
  if (ws.getDataset(name) === undefined)
    importVqa(ws.dir, {
      name,
      split,
      questionsFile: join(dir, questionsFileName(split)),
      annotationsFile: join(dir, annotationsFileName(split)),
      ...(existsSync(join(dir, IMAGES_DIR)) ? { images: { root: join(dir, IMAGES_DIR) } } : {}),
    });
  for (const kind of EMBEDDING_KINDS)
    if (ws.getEmbedding(name, kind) === undefined)
      importEmbedding(ws, { file: join(dir, embeddingFileName(split, kind)), dataset: name, kind });
}
