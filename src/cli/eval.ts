import type { Command } from "commander";
import { EvalSettingsSchema, parseEvalOptions } from "../eval/config.js";
import { type EvaluateResult, evalInterrupted, evaluate } from "../eval/evaluate.js";
import type { RunStats } from "../eval/runner.js";
import { renderComparison } from "../report/compare-render.js";
import { LeverError } from "../util/errors.js";
import { formatDuration } from "../util/progress.js";
import { MAX_COMPLETION_CHARS } from "../vlm/openai-client.js";
import { VlmSettingsSchema } from "../vlm/settings.js";
import { printJson, withWorkspace } from "./common.js";
import { RERUN_TO_RESUME, withSigint } from "./interrupt.js";
import { bindSettings, resolve } from "./options.js";

/** Registers `lever eval`. */
export function register(program: Command): void {
  const command = program
    .command("eval")
    .description(
      "ICL evaluation: for every query × retriever × shot choose demonstrations, ask the VLM, score with the official VQA accuracy, store every prediction (resumable), and report accuracy with CIs and paired tests vs random (lever compare's numbers for these rows)",
    )
    .option("--json", "print the result as one JSON object");
  const evalSettings = bindSettings(command, EvalSettingsSchema, { fileOption: "config" });
  const vlmSettings = bindSettings(command, VlmSettingsSchema, {
    fileOption: "vlm-config",
    fileHelp: "VLM backend settings file (JSON or YAML): any of the backend settings; flags override it",
  });
  command.action(async (flags: { json?: boolean }, cmd: Command) => {
    const options = parseEvalOptions({ ...resolve(cmd, evalSettings), ...resolve(cmd, vlmSettings) });
    const result: EvaluateResult = await withWorkspace(cmd, (ws) =>
      withSigint((signal) => evaluate(ws, options, { signal, clusterByImage: options.clusterByImage })),
    );
    for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
    for (const warning of result.warnings) process.stderr.write(`warning: ${warning}\n`);
    process.stderr.write(`${runLine(result)}\n`);
    if (result.stats.aborted) throw evalInterrupted(result, RERUN_TO_RESUME);
    if (flags.json) printJson(result);
    else if (result.summary !== null) process.stdout.write(`${renderComparison(result.summary, "table")}\n`);
    // The table shows what succeeded; failed predictions make the command fail (they are stored and
    // retried by the next run of the same command).
    if (result.stats.failures > 0) {
      process.stderr.write(`${failureLine(result.stats)}\n`);
      throw new LeverError(
        `${result.stats.failures} of ${result.stats.planned} predictions failed (left out of the accuracies above); ` +
          "rerun the same command to retry them",
        { record: result.runId },
      );
    }
  });
}

/** "failed predictions: http-5xx 40, timeout 2; in random@1 10, topk-image@1 32". */
export function failureLine(s: RunStats): string {
  const reasons = Object.entries(s.failuresByReason).map(([reason, n]) => `${reason} ${n}`);
  const cells = Object.entries(s.failuresByCell).map(([cell, n]) => `${cell} ${n}`);
  return `failed predictions: ${reasons.join(", ")}; in ${cells.join(", ")}`;
}

function runLine(result: EvaluateResult): string {
  const s = result.stats;
  const vlm = result.vlm;
  const calls = vlm
    ? `; VLM: ${vlm.calls} calls, ${vlm.cacheHits} cache hits, ${vlm.failures.total} failures` +
      (vlm.completionsCut > 0
        ? `, ${vlm.completionsCut} completions longer than ${MAX_COMPLETION_CHARS / 1024} KiB stored cut to it (docs/vlm.md)`
        : "")
    : `; VLM: ${s.prompts} prompts (no cache)`;
  return (
    `run ${result.runId}${result.resumed ? " (resumed)" : ""}: ${s.planned} predictions planned, ${s.skipped} already stored, ` +
    `${s.evaluated} evaluated, ${s.failures} failed${calls}; ${formatDuration(s.seconds)}`
  );
}
