import type { Command } from "commander";
import { type ComputeResult, ComputeSettingsSchema, computeEmbedding } from "../embed/compute.js";
import { createProgress } from "../util/progress.js";
import { group, printJson, withWorkspace } from "./common.js";
import { bindSettings, resolve } from "./options.js";

/** `lever embed compute`: CLIP embeddings from a local ONNX export (`lever embed import` is in formats.ts). */
export function register(program: Command): void {
  const command = group(program, "embed", "embedding matrices: import, compute")
    .command("compute")
    .description("compute CLIP image / question / joint embeddings of a dataset from a local ONNX model folder")
    .option("--no-progress", "no progress bar on stderr")
    .option("--json", "print the result as JSON");
  const settings = bindSettings(command, ComputeSettingsSchema, { fileOption: "config" });
  command.action(async (flags: { progress: boolean; json?: boolean }, cmd: Command) => {
    const options = resolve(cmd, settings);
    const result = await withWorkspace(cmd, (ws) =>
      computeEmbedding(ws, {
        ...options,
        progress: flags.progress ? createProgress({ label: `embed ${options.kind}` }) : undefined,
      }),
    );
    if (flags.json) printJson(result);
    else process.stdout.write(formatCompute(result));
  });
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
