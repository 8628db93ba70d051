/**
 * The data stage of `lever run`: the experiment's two splits and their embeddings in the workspace,
 * as datasets `x<id>-train` and `x<id>-val`. A synthetic world is written once under
 * `experiments/data/x<id>/` (a caption world from `data.captionSynth` likewise) and imported (its world file
 * answers for the simulated VLM); official VQA files (`data.import`), COCO caption files
 * (`data.importCaptions`) and embedding files are imported unless the workspace already holds them, so a
 * rerun after a crash finishes the import.
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import type { EMBEDDING_KINDS } from "../data/embeddings.js";
import { importCaptionSynthSplit } from "../sim/caption/ingest.js";
import { writeCaptionSynthDataset } from "../sim/caption/synth.js";
import { importSynthSplit } from "../sim/ingest.js";
import { WORLD_FILE, writeSynthDataset } from "../sim/synth.js";
import { importCaptions } from "../store/ingest/captions.js";
import { importEmbedding } from "../store/ingest/embeddings.js";
import { importVqa } from "../store/ingest/vqa.js";
import type { Workspace } from "../store/workspace.js";
import { demonstrationReferences } from "../task/caption-reference.js";
import type { Experiment } from "./schema.js";

/** The datasets' names; a synthetic world's file as `world` and again as `worldFile` (a file the record needs). */
export interface DataOutputs {
  train: string;
  val: string;
  world?: string;
  worldFile?: string;
}

/** Writes (synthetic) or reads (official files) the two splits and their embeddings into the workspace. */
export function runData(ws: Workspace, e: Experiment, tag: string): DataOutputs {
  const names = { train: `${tag}-train`, val: `${tag}-val` };
  if (e.data.captionSynth !== undefined) {
    const dir = join(ws.dir, "experiments", "data", tag);
    if (!existsSync(join(dir, WORLD_FILE)))
      writeCaptionSynthDataset({ out: dir, params: e.data.captionSynth, images: true });
    for (const split of ["train", "val"] as const) importCaptionSynthSplit(ws, dir, split, names[split]);
    const world = join(dir, WORLD_FILE);
    return { ...names, world, worldFile: world };
  }
  if (e.data.synth !== undefined) {
    const dir = join(ws.dir, "experiments", "data", tag);
    if (!existsSync(join(dir, WORLD_FILE))) writeSynthDataset({ out: dir, params: e.data.synth, images: true });
    for (const split of ["train", "val"] as const) importSynthSplit(ws, dir, split, names[split]);
    const world = join(dir, WORLD_FILE);
    return { ...names, world, worldFile: world };
  }
  // The schema admits exactly one data source: the real files' (caption or VQA) here.
  const { embeddings } = e.data.importCaptions ?? (e.data.import as NonNullable<Experiment["data"]["import"]>);
  for (const split of ["train", "val"] as const) {
    if (ws.getDataset(names[split]) === undefined) importSplit(ws, e.data, split, names[split]);
    for (const [kind, file] of Object.entries(embeddings[split]))
      if (ws.getEmbedding(names[split], kind) === undefined)
        importEmbedding(ws, { file, dataset: names[split], kind: kind as (typeof EMBEDDING_KINDS)[number] });
  }
  return names;
}

/** Imports one split of real data: COCO caption files (`data.importCaptions`) or official VQA files (`data.import`). */
function importSplit(ws: Workspace, data: Experiment["data"], split: "train" | "val", name: string): void {
  if (data.importCaptions !== undefined) {
    importCaptions(ws.dir, { ...data.importCaptions[split], name, replace: false }, demonstrationReferences);
    return;
  }
  const files = (data.import as NonNullable<Experiment["data"]["import"]>)[split];
  importVqa(ws.dir, {
    name,
    split,
    questionsFile: files.questions,
    annotationsFile: files.annotations,
    ...(files.images !== undefined ? { images: { root: files.images } } : {}),
    ...(files.subset !== undefined ? { subset: files.subset } : {}),
  });
}
