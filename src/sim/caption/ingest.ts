/**
 * Imports one split of a synthetic caption world folder (src/sim/caption/synth.ts) into a workspace as
 * an ordinary caption dataset, through `lever data import-captions`' own machinery, with its image,
 * text and joint embeddings. What the workspace already has under that name is kept (a rerun imports
 * nothing twice). A folder written without images is imported without an image root.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EMBEDDING_KINDS } from "../../data/embeddings.js";
import { CaptionImportSettingsSchema, importCaptions } from "../../store/ingest/captions.js";
import { importEmbedding } from "../../store/ingest/embeddings.js";
import type { Workspace } from "../../store/workspace.js";
import { embeddingFileName, IMAGES_DIR } from "../synth.js";
import type { Split } from "../world.js";
import { captionsFileName } from "./synth.js";

export function importCaptionSynthSplit(ws: Workspace, dir: string, split: Split, name: string = split): void {
  if (ws.getDataset(name) === undefined)
    importCaptions(
      ws.dir,
      CaptionImportSettingsSchema.parse({
        name,
        captions: join(dir, captionsFileName(split)),
        ...(existsSync(join(dir, IMAGES_DIR)) ? { images: join(dir, IMAGES_DIR) } : {}),
      }),
    );
  for (const kind of EMBEDDING_KINDS)
    if (ws.getEmbedding(name, kind) === undefined)
      importEmbedding(ws, { file: join(dir, embeddingFileName(split, kind)), dataset: name, kind });
}
