/**
 * A small simulated-world workspace for evaluation tests: train/val datasets built from a World,
 * its image/text/joint embeddings imported through the real embedding import, and world.json.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { VqaItem } from "../../src/data/item.js";
import { writeNpy } from "../../src/data/npy.js";
import { splitEmbeddings } from "../../src/sim/embed.js";
import type { WorldParamsInput } from "../../src/sim/params.js";
import { worldFileContent } from "../../src/sim/vlm.js";
import { type Split, World } from "../../src/sim/world.js";
import { importEmbedding } from "../../src/store/ingest/embeddings.js";
import { Workspace } from "../../src/store/workspace.js";

export interface SimWorkspace {
  dir: string;
  ws: Workspace;
  world: World;
  worldFile: string;
}

/** Items with a placeholder image file per image, like `lever data synth` writes. */
function itemsOf(world: World, split: Split, imageDir: string | null): VqaItem[] {
  if (imageDir !== null) mkdirSync(imageDir, { recursive: true });
  return world.itemsOf(split).map((i) => ({
    questionId: world.questionIds[i],
    imageId: String(world.imageOf[i]),
    question: world.questions[i],
    answers: world.annotatorAnswers[i].map((answer) => ({ answer })),
    answer: world.shownAnswer[i],
    questionType: "synthetic",
    answerType: "other",
    imagePath: imageDir === null ? null : placeholderImage(imageDir, world.imageOf[i]),
  }));
}

function placeholderImage(dir: string, imageId: number): string {
  const path = join(dir, `${imageId}.png`);
  if (!existsSync(path)) writeFileSync(path, `placeholder ${imageId}`);
  return path;
}

export function simWorkspace(
  params: WorldParamsInput = { trainItems: 400, valItems: 60, concepts: 8 },
  options: { images?: boolean } = {},
): SimWorkspace {
  const dir = mkdtempSync(join(tmpdir(), "lever-eval-"));
  const world = World.generate(params);
  const worldFile = join(dir, "world.json");
  writeFileSync(worldFile, JSON.stringify(worldFileContent(world)));
  const ws = Workspace.open(join(dir, "ws"));
  for (const [name, split] of [
    ["train", "train"],
    ["val", "val"],
  ] as const) {
    ws.putDataset(
      { name, split, source: "synth", files: [] },
      itemsOf(world, split, options.images === false ? null : join(dir, "images", split)),
    );
    const emb = splitEmbeddings(world, split);
    for (const kind of ["image", "text", "joint"] as const) {
      const file = join(dir, `${name}-${kind}.npy`);
      writeNpy(file, emb[kind], [emb.ids.length, emb.dim]);
      writeFileSync(`${file}.ids.json`, JSON.stringify(emb.ids));
      importEmbedding(ws, { file, dataset: name, kind, idsFile: `${file}.ids.json` });
    }
  }
  return { dir, ws, world, worldFile };
}
