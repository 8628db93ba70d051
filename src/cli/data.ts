import type { Command } from "commander";
import type { ImageSource } from "../data/images.js";
import { parseSubsetSpec } from "../data/splits.js";
import { type DatasetSummary, importVqa, summarizeDataset } from "../store/ingest/vqa.js";
import type { DatasetRecord } from "../store/types.js";
import { check, LeverError } from "../util/errors.js";
import { group, printJson, table, withWorkspace, workspaceDir } from "./common.js";

const SPLITS = ["train", "val"];

interface ImportFlags {
  format: string;
  questions: string;
  annotations: string;
  images?: string;
  imageTemplate?: string;
  split: string;
  name: string;
  subset?: string;
  seed: string;
  replace?: boolean;
  json?: boolean;
}

/** Registers `data import`, `data inspect` and `data list` (other files add more `data` commands). */
export function register(program: Command): void {
  const data = group(program, "data", "datasets: import, inspect, list");

  data
    .command("import")
    .description("import a VQA split from the official questions + annotations JSON files")
    .option("--format <format>", "input format (only: vqa — OKVQA and VQAv2 official files)", "vqa")
    .requiredOption("--questions <file>", "questions file, e.g. OpenEnded_mscoco_train2014_questions.json")
    .requiredOption("--annotations <file>", "annotations file, e.g. mscoco_train2014_annotations.json")
    .option("--images <dir>", "COCO root: <dir>/<split>2014/COCO_<split>2014_<id:012>.jpg (or the files in <dir>)")
    .option("--image-template <template>", "image path template, e.g. /data/{split}/{image_id:012}.jpg")
    .requiredOption("--split <split>", `split: ${SPLITS.join(" | ")}`)
    .requiredOption("--name <name>", "dataset name in the workspace")
    .option("--subset <spec>", "keep first:N (lowest question ids) or random:N (seeded)")
    .option("--seed <n>", "seed for --subset random:N", "0")
    .option("--replace", "overwrite an existing dataset of the same name")
    .option("--json", "print the result as JSON")
    .action((flags: ImportFlags, command: Command) => {
      check(flags.format === "vqa", `unknown format "${flags.format}" (supported: vqa)`, { field: "--format" });
      check(SPLITS.includes(flags.split), `split must be one of ${SPLITS.join(", ")}, got "${flags.split}"`, {
        field: "--split",
      });
      if (flags.images !== undefined && flags.imageTemplate !== undefined) {
        throw new LeverError("give either --images or --image-template, not both", { field: "--images" });
      }
      const images: ImageSource | undefined =
        flags.images !== undefined
          ? { root: flags.images }
          : flags.imageTemplate !== undefined
            ? { template: flags.imageTemplate }
            : undefined;
      const seed = Number(flags.seed);
      check(Number.isSafeInteger(seed), `seed must be an integer, got "${flags.seed}"`, { field: "--seed" });
      const result = importVqa(workspaceDir(command), {
        name: flags.name,
        questionsFile: flags.questions,
        annotationsFile: flags.annotations,
        split: flags.split,
        images,
        subset: flags.subset === undefined ? undefined : parseSubsetSpec(flags.subset, "--subset"),
        seed,
        replace: flags.replace,
      });
      for (const warning of result.read.warnings) process.stderr.write(`warning: ${warning}\n`);
      if (result.droppedEmbeddings.length > 0) {
        process.stderr.write(
          `warning: dropped the embedding records of the replaced dataset: ${result.droppedEmbeddings.join(", ")}\n`,
        );
      }
      if (flags.json) {
        printJson({ dataset: result.record, read: result.read, droppedEmbeddings: result.droppedEmbeddings });
        return;
      }
      const { record, read } = result;
      const lines = [
        `imported "${record.name}": ${record.itemCount} items (split ${record.split}; ${read.totalQuestions} questions in the files${record.subset ? `, subset ${record.subset.spec}` : ""})`,
        `  answer from multiple_choice_answer: ${read.answerFrom.multipleChoice}, from the majority of 10: ${read.answerFrom.majority}`,
      ];
      if (record.images === null) lines.push("  images: none given (imagePath is null)");
      else {
        lines.push(`  images: ${record.images}`);
        lines.push(`  ${missingLine(read.missingImages)}`);
      }
      process.stdout.write(`${lines.join("\n")}\n`);
    });

  data
    .command("inspect")
    .description("show counts, answer/question types, annotator agreement, missing images and examples")
    .argument("<name>", "dataset name")
    .option("--json", "print as JSON")
    .action(async (name: string, flags: { json?: boolean }, command: Command) => {
      const summary = await withWorkspace(
        command,
        (ws) => summarizeDataset(ws.requireDataset(name), ws.loadItems(name)),
        { readOnly: true },
      );
      if (flags.json) printJson(summary);
      else process.stdout.write(formatSummary(summary));
    });

  data
    .command("list")
    .description("list the datasets in the workspace")
    .option("--json", "print as JSON")
    .action(async (flags: { json?: boolean }, command: Command) => {
      const datasets = await withWorkspace(command, (ws) => ws.listDatasets(), { readOnly: true });
      if (flags.json) printJson(datasets);
      else process.stdout.write(formatList(datasets));
    });
}

function missingLine(m: { checked: number; count: number; examples: string[] }): string {
  if (m.count === 0) return `missing images: none of ${m.checked} distinct images`;
  return `missing images: ${m.count} of ${m.checked} distinct images, e.g. ${m.examples.slice(0, 3).join(", ")}`;
}

function percent(count: number, total: number): string {
  return total === 0 ? "0.0%" : `${((100 * count) / total).toFixed(1)}%`;
}

export function formatList(datasets: DatasetRecord[]): string {
  if (datasets.length === 0) return "no datasets (import one with: lever data import --format vqa …)\n";
  const rows = [["name", "split", "source", "items", "subset", "created"]];
  for (const d of datasets) {
    rows.push([
      d.name,
      d.split,
      d.source,
      String(d.itemCount),
      d.subset === null ? "all" : `${d.subset.spec} of ${d.subset.of}`,
      d.createdAt.slice(0, 19).replace("T", " "),
    ]);
  }
  return `${table(rows)}\n`;
}

export function formatSummary(s: DatasetSummary): string {
  const out: string[] = [];
  out.push(`dataset ${s.name} (${s.source}, split ${s.split})`);
  const subset =
    s.subset === null
      ? "all"
      : `${s.subset.spec} of ${s.subset.of}${s.subset.seed === null ? "" : ` (seed ${s.subset.seed})`}`;
  out.push(`items ${s.items}, images ${s.images}, subset ${subset}, items hash ${s.itemsHash.slice(0, 12)}`);
  for (const f of s.files) out.push(`file ${f.role}: ${f.path} (${f.bytes} bytes, sha256 ${f.sha256.slice(0, 12)})`);
  out.push("");
  out.push("answer types:");
  for (const r of s.answerTypes)
    out.push(`  ${r.value.padEnd(12)} ${String(r.count).padStart(8)}  ${percent(r.count, s.items)}`);
  out.push(`question types (top ${s.questionTypes.top.length} of ${s.questionTypes.distinct}):`);
  for (const r of s.questionTypes.top) {
    out.push(`  ${r.value.padEnd(24)} ${String(r.count).padStart(8)}  ${percent(r.count, s.items)}`);
  }
  out.push(`answers per item: ${s.answersPerItem.map((r) => `${r.value} answers × ${r.count}`).join(", ")}`);
  out.push(`annotators giving the item's answer: mean ${s.agreement.mean.toFixed(2)}`);
  s.agreement.histogram.forEach((count, k) => {
    if (count > 0)
      out.push(`  ${String(k).padStart(2)} agree: ${String(count).padStart(8)}  ${percent(count, s.items)}`);
  });
  out.push(s.missingImages === null ? "images: none (imported without images)" : missingLine(s.missingImages));
  out.push("");
  out.push("examples:");
  for (const item of s.examples) {
    const answers = countAnswers(item.answers.map((a) => a.answer));
    out.push(`  [${item.questionId}] image ${item.imageId}: ${item.question}`);
    out.push(`      answer: ${item.answer}   (annotators: ${answers})`);
    if (item.imagePath !== null) out.push(`      image: ${item.imagePath}`);
  }
  return `${out.join("\n")}\n`;
}

function countAnswers(answers: string[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
  return [...counts].map(([a, c]) => (c > 1 ? `${a} ×${c}` : a)).join(", ");
}
