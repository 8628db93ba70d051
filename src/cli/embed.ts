import type { Command } from "commander";
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import { type ComputeResult, computeEmbedding, DEFAULT_BATCH } from "../embed/compute.js";
import { createProgress } from "../eval/progress.js";
import { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { group, printJson, workspaceDir } from "./common.js";

interface ComputeFlags {
  dataset: string;
  kind: string;
  model: string;
  batch: string;
  threads?: string;
  skipMissing?: boolean;
  progress: boolean;
  json?: boolean;
}

/** `lever embed compute`: CLIP embeddings from a local ONNX export (`lever embed import` is in formats.ts). */
export function register(program: Command): void {
  group(program, "embed", "embedding matrices: import, compute")
    .command("compute")
    .description("compute CLIP image / question / joint embeddings of a dataset from a local ONNX model folder")
    .requiredOption("--dataset <name>", "dataset whose images and questions to embed")
    .option(
      "--kind <kind>",
      `embedding kind: ${EMBEDDING_KINDS.join(" | ")} (joint = normalise(image + text))`,
      "joint",
    )
    .requiredOption(
      "--model <dir>",
      "CLIP exported to ONNX (config, preprocessor, tokenizer, onnx/); docs/embeddings.md",
    )
    .option("--batch <n>", "images or questions per model call", String(DEFAULT_BATCH))
    .option("--threads <n>", "onnxruntime threads (default: one per physical core)")
    .option("--skip-missing", "leave questions whose image is missing or unreadable without a row (counted, listed)")
    .option("--no-progress", "no progress bar on stderr")
    .option("--json", "print the result as JSON")
    .action(async (flags: ComputeFlags, command: Command) => {
      if (!EMBEDDING_KINDS.includes(flags.kind as EmbeddingKind))
        throw new LeverError(`must be one of ${EMBEDDING_KINDS.join(", ")}, got "${flags.kind}"`, { field: "--kind" });
      const batch = positiveInt(flags.batch, "--batch");
      const threads = flags.threads === undefined ? undefined : positiveInt(flags.threads, "--threads");
      const ws = Workspace.open(workspaceDir(command), { create: false });
      try {
        const result = await computeEmbedding(ws, {
          dataset: flags.dataset,
          kind: flags.kind as EmbeddingKind,
          model: flags.model,
          batch,
          threads,
          skipMissing: flags.skipMissing,
          progress: flags.progress ? createProgress({ label: `embed ${flags.kind}` }) : undefined,
        });
        if (flags.json) printJson(result);
        else process.stdout.write(formatCompute(result));
      } finally {
        ws.close();
      }
    });
}

function positiveInt(text: string, field: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new LeverError(`must be a positive integer, got "${text}"`, { field });
  return n;
}

/** The summary a user reads: what was stored, what was computed now vs resumed, speed, skipped files. */
export function formatCompute(r: ComputeResult): string {
  const lines = [`stored ${r.rows} × ${r.dim} ${r.kind} embeddings for "${r.dataset}" (model ${r.model})`];
  const part = (label: string, t: ComputeResult["images"]) =>
    t === undefined ? [] : [`${t.units} distinct ${label} (${t.computed} computed now, ${t.resumed} resumed)`];
  const computed = (r.images?.computed ?? 0) + (r.texts?.computed ?? 0);
  lines.push(`  ${[...part("images", r.images), ...part("questions", r.texts)].join("; ")}`);
  lines.push(
    computed > 0
      ? `  ${computed} rows computed in ${r.embedSeconds.toFixed(1)} s (${r.unitsPerSecond.toFixed(1)} rows/s); ${r.seconds.toFixed(1)} s in all`
      : `  nothing left to compute (every batch was stored by an earlier run); ${r.seconds.toFixed(1)} s in all`,
  );
  if (r.discardedPartial) lines.push("  note: cleared partial results of a run with another model, dataset or flags");
  if (r.skipped.length > 0) {
    const missing = r.skipped.filter((s) => s.reason === "missing").length;
    lines.push(
      `  skipped ${r.skipped.length} images (${missing} missing, ${r.skipped.length - missing} unreadable), so ${r.itemsWithoutRow} questions have no row; e.g. ${r.skipped
        .slice(0, 3)
        .map((s) => s.path)
        .join(", ")}`,
    );
  }
  lines.push(`  artefact: artifacts/${r.path} + artifacts/${r.idsPath}`);
  return `${lines.join("\n")}\n`;
}
