import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import type { ZodType } from "zod";
import { importCaptionSynthSplit } from "../sim/caption/ingest.js";
import { type CaptionWorldParamsInput, CaptionWorldParamsSchema } from "../sim/caption/params.js";
import { writeCaptionSynthDataset } from "../sim/caption/synth.js";
import { importSynthSplit } from "../sim/ingest.js";
import { type WorldParamsInput, WorldParamsSchema } from "../sim/params.js";
import { WORLD_FILE, writeSynthDataset } from "../sim/synth.js";
import { NAME_PATTERN } from "../store/datasets.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { parseOrThrow } from "../util/validate.js";
import { group, printJson, withWorkspace } from "./common.js";

interface SynthFlags {
  items: string;
  valItems?: string;
  concepts?: string;
  seed?: string;
  dim?: string;
  out: string;
  params?: string;
  images: boolean;
  replace?: boolean;
  import?: string;
  json?: boolean;
  task: string;
}

/** The tasks a synthetic world can be written for. */
const SYNTH_TASKS = ["vqa", "caption"] as const;

/** Flags that set a world parameter (flag wins over --params). */
const FLAG_PARAMS: {
  flag: keyof SynthFlags;
  name: string;
  set: (p: WorldParamsInput, v: number) => void;
  /** Only for these tasks (all when absent). */
  tasks?: readonly string[];
}[] = [
  { flag: "items", name: "--items", set: (p, v) => Object.assign(p, { trainItems: v }) },
  { flag: "valItems", name: "--val-items", set: (p, v) => Object.assign(p, { valItems: v }) },
  { flag: "concepts", name: "--concepts", set: (p, v) => Object.assign(p, { concepts: v }), tasks: ["vqa"] },
  { flag: "seed", name: "--seed", set: (p, v) => Object.assign(p, { seed: v }) },
  { flag: "dim", name: "--dim", set: (p, v) => Object.assign(p, { embedding: { ...(p.embedding ?? {}), dim: v } }) },
];

/** Registers `lever data synth`. */
export function register(program: Command): void {
  group(program, "data", "datasets: import, inspect, list, synth")
    .command("synth")
    .description(
      "write a synthetic VQA or caption dataset (official VQAv2 or COCO caption JSON, embeddings, placeholder images, world.json for the sim VLM)",
    )
    .option("--task <task>", `the task of the world: ${SYNTH_TASKS.join(" or ")}`, "vqa")
    .requiredOption("--items <n>", "questions (caption task: images) in the train split (the demonstration index)")
    .option("--val-items <n>", "questions (caption task: images) in the val split (queries; default 1000)")
    .option("--concepts <n>", "latent concepts (default 24; vqa only)")
    .option("--seed <n>", "world seed (default 1)")
    .option("--dim <n>", "embedding dimension (default 64)")
    .requiredOption("--out <dir>", "output directory")
    .option("--params <file>", "JSON file of world parameters (docs/simulator.md); the flags above override it")
    .option("--no-images", "do not write placeholder image files")
    .option("--replace", "write into a folder that is not empty (a synthetic dataset there is overwritten)")
    .option(
      "--import <name>",
      "also import both splits with their image, text and joint embeddings into the workspace, as datasets NAME-train and NAME-val",
    )
    .option("--json", "print the summary as JSON")
    .action(async (flags: SynthFlags, command: Command) => {
      if (!(SYNTH_TASKS as readonly string[]).includes(flags.task))
        throw new LeverError(`unknown task "${flags.task}" (expected ${SYNTH_TASKS.join(" or ")})`, {
          field: "--task",
        });
      const caption = flags.task === "caption";
      const params = resolveParams(flags, caption ? CaptionWorldParamsSchema : WorldParamsSchema);
      checkOut(flags.out, flags.replace === true);
      const names = flags.import !== undefined ? importNames(flags.import) : undefined;
      if (names !== undefined) await withWorkspace(command, (ws) => checkFree(ws, names), { create: true });
      const summary = caption
        ? writeCaptionSynthDataset({ out: flags.out, params: params as CaptionWorldParamsInput, images: flags.images })
        : writeSynthDataset({ out: flags.out, params, images: flags.images });
      const importSplit = caption ? importCaptionSynthSplit : importSynthSplit;
      if (names !== undefined)
        await withWorkspace(command, (ws) => {
          importSplit(ws, flags.out, "train", names.train);
          importSplit(ws, flags.out, "val", names.val);
        });
      if (flags.json) {
        printJson(names !== undefined ? { ...summary, imported: names } : summary);
        return;
      }
      const { train, val } = summary.counts;
      const count = (c: { questions: number; images: number } | { images: number; captions: number }) =>
        "questions" in c
          ? `${c.questions} questions on ${c.images} images`
          : `${c.images} images, ${c.captions} captions`;
      process.stdout.write(
        [
          `Wrote ${summary.out}`,
          `  train: ${count(train)}`,
          `  val:   ${count(val)}`,
          `  embeddings: image, text, joint (dim ${summary.embeddingDim}) per split`,
          `  world: ${summary.worldFile} (fingerprint ${summary.fingerprint.slice(0, 12)})`,
          ...(names !== undefined
            ? [
                `  imported: datasets ${names.train} and ${names.val} with their embeddings (--world ${summary.worldFile})`,
              ]
            : []),
          "",
        ].join("\n"),
      );
    });
}

/**
 * `--out` must be a folder that is absent or empty — a user's files are never overwritten, nor a
 * dataset written among them — unless `--replace` says so (a synthetic dataset there is then overwritten).
 */
function checkOut(out: string, replace: boolean): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new LeverError("is a file, not a folder", { file: out, field: "--out" });
  if (replace || readdirSync(out).length === 0) return;
  throw new LeverError(
    existsSync(join(out, WORLD_FILE))
      ? "a synthetic dataset is already there (pass --replace to overwrite it)"
      : "the folder is not empty and holds no synthetic dataset; choose a new or empty folder (or pass --replace to write into it anyway)",
    { file: out, field: "--out" },
  );
}

/** The dataset names `--import NAME` gives the two splits, checked as the workspace checks dataset names. */
function importNames(name: string): { train: string; val: string } {
  const names = { train: `${name}-train`, val: `${name}-val` };
  for (const derived of Object.values(names))
    if (!NAME_PATTERN.test(derived))
      throw new LeverError(`dataset name "${derived}" must match ${NAME_PATTERN}`, { field: "--import" });
  return names;
}

/** Refuses before anything is written when the workspace already holds one of the datasets. */
function checkFree(ws: Workspace, names: { train: string; val: string }): void {
  for (const name of [names.train, names.val])
    if (ws.getDataset(name) !== undefined)
      throw new LeverError(`the workspace already has a dataset "${name}" (choose another --import name)`, {
        field: "--import",
      });
}

/** --params file, then the flags, validated as one parameter set; errors name the flag or the file field. */
function resolveParams(flags: SynthFlags, schema: ZodType): WorldParamsInput {
  let params: WorldParamsInput = {};
  if (flags.params !== undefined) {
    params = readJsonFile(flags.params) as WorldParamsInput;
    parseOrThrow(schema, params, { file: flags.params });
  }
  for (const { flag, name, set, tasks } of FLAG_PARAMS) {
    const text = flags[flag];
    if (typeof text !== "string") continue;
    if (tasks !== undefined && !tasks.includes(flags.task))
      throw new LeverError(`${name} does not apply to a ${flags.task} world`, { field: name });
    const value = Number(text);
    if (text.trim() === "" || !Number.isSafeInteger(value))
      throw new LeverError(`expected an integer, got "${text}"`, { field: name });
    set(params, value);
    const parsed = schema.safeParse(params);
    if (!parsed.success) {
      const issue = parsed.error.issues.find((i) => i.path.length > 0) ?? parsed.error.issues[0];
      throw new LeverError(`${issue.message} (parameter ${issue.path.join(".")})`, { field: name });
    }
  }
  return params;
}
