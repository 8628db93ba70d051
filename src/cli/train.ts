import type { Command } from "commander";
import { resolveTrainingRun } from "../icl/checkpoint-ref.js";
import { checkGrpoSettings } from "../train/objective/grpo-settings.js";
import type { HealthWarning } from "../train/objective/health.js";
import { formatMetric } from "../train/stage/progress.js";
import {
  GrpoStageConfigSchema,
  RceStageConfigSchema,
  RlInputsSchema,
  type RlStageSettings,
} from "../train/stage/rl-settings.js";
import { type RlStageResult, resumeRlStage, runRlStage } from "../train/stage/rl-stage.js";
import { SftConfigSchema } from "../train/stage/sft-run.js";
import { resumeSftStage, runSftStage, SftInputsSchema, type SftStageResult } from "../train/stage/sft-stage.js";
import { VlmSettingsSchema } from "../vlm/settings.js";
import { group, printJson } from "./common.js";
import { withInterrupt } from "./interrupt.js";
import { bindSettings, resolve } from "./options.js";

function printSummary(result: SftStageResult, json: boolean): void {
  const summary = {
    runId: result.runId,
    queries: result.split,
    trajectories: result.stats.trajectories,
    shots: result.stats.shots,
    K: result.stats.K,
    skippedBeams: result.stats.skippedBeams,
    epochsRun: result.epochsRun,
    stoppedEarly: result.stoppedEarly,
    bestEpoch: result.bestEpoch + 1,
    best: result.history[result.bestEpoch] ?? null,
    bestCheckpoint: result.bestCheckpoint,
    warnings: result.warnings,
  };
  if (json) {
    printJson(summary);
    return;
  }
  process.stdout.write(
    `run ${summary.runId}: ${summary.queries.train}/${summary.queries.val} train/val queries, ${summary.trajectories} beams ` +
      `(${summary.shots} shots, K=${summary.K}${summary.skippedBeams > 0 ? `, ${summary.skippedBeams} skipped` : ""}); ` +
      `${summary.epochsRun} epochs${summary.stoppedEarly ? " (stopped early)" : ""}; best epoch ${summary.bestEpoch}: ` +
      `${Object.entries(summary.best ?? {})
        .map(([k, v]) => `${k} ${formatMetric(k, v)}`)
        .join(", ")}; ${healthCount(summary.warnings)}\nbest checkpoint ${summary.bestCheckpoint} (${summary.runId})\n`,
  );
}

function printRlSummary(result: RlStageResult, json: boolean): void {
  const last = result.checkpoints.at(-1) ?? null;
  const summary = {
    runId: result.runId,
    resumed: result.resumed,
    queries: result.split,
    trajectories: result.stats.trajectories,
    failedTrajectories: result.stats.failedTrajectories,
    zeroVarianceQueries: result.stats.zeroVarianceQueries,
    positiveFraction: result.stats.positiveFraction,
    shots: result.stats.shots,
    K: result.stats.K,
    trainable: result.trainable,
    epochsRun: result.epochsRun,
    stoppedEarly: result.stoppedEarly,
    bestEpoch: result.bestEpoch + 1,
    best: result.history[result.bestEpoch] ?? null,
    bestCheckpoint: result.bestCheckpoint,
    lastCheckpoint: last,
    warnings: result.warnings,
  };
  if (json) {
    printJson(summary);
    return;
  }
  const b = summary.best ?? {};
  const shown = ["valAccuracy", "valRce", "valTop1", "selectionChange"].filter((k) => b[k] !== undefined);
  process.stdout.write(
    `run ${summary.runId}${summary.resumed ? " (resumed)" : ""}: ${summary.queries.train}/${summary.queries.val} train/val queries, ` +
      `${summary.trajectories} trajectories (${summary.shots} shots, K=${summary.K}; ${summary.failedTrajectories} failed left out, ` +
      `${summary.zeroVarianceQueries} queries with tied rewards); ${summary.trainable.parameters}/${summary.trainable.total} parameters trained; ` +
      `${summary.epochsRun} epochs${summary.stoppedEarly ? " (stopped early)" : ""}; best epoch ${summary.bestEpoch}: ` +
      `${shown.map((k) => `${k} ${formatMetric(k, b[k])}`).join(", ")}; ${healthCount(summary.warnings)}\n` +
      `best checkpoint ${summary.bestCheckpoint} (${summary.runId})\nlast checkpoint ${last} (${summary.runId}:last)\n`,
  );
}

/** "no health warnings", or "3 health warnings (kl-dominates in epochs 2–4)". */
function healthCount(warnings: readonly HealthWarning[]): string {
  if (warnings.length === 0) return "no health warnings";
  const epochs = new Map<string, number[]>();
  for (const w of warnings) epochs.set(w.code, [...(epochs.get(w.code) ?? []), w.epoch + 1]);
  const codes = [...epochs].map(([code, e]) => `${code} in epoch${e.length > 1 ? "s" : ""} ${e.join(", ")}`);
  return `${warnings.length} health warning${warnings.length > 1 ? "s" : ""} (${codes.join("; ")})`;
}

const note = (text: string) => process.stderr.write(`note: ${text}\n`);

/** Registers the `train` commands. */
export function register(program: Command): void {
  const train = group(program, "train", "train the pointer selector: SFT on beams, then RCE and GRPO on rollouts");
  const sft = train
    .command("sft")
    .description("supervised training on beam data: labels are the positions of each beam's ICDs in the query's pool")
    .option("--quiet", "no progress output")
    .option("--json", "print the result as JSON");
  const sftSettings = bindSettings(sft, SftInputsSchema.extend(SftConfigSchema.shape), {
    fileOption: "config",
    fileHelp: "settings file (JSON or YAML): inputs and model / optim / loss / data / seed / dtype; flags override it",
  });
  sft.action(async (flags: { quiet?: boolean; json?: boolean }, command: Command) => {
    const { beams, pools, dataset, embedding, init, name, ...config } = resolve(command, sftSettings);
    const result = await withInterrupt(command, (ws, signal) =>
      runSftStage(ws, {
        beams,
        pools,
        dataset,
        embedding,
        init,
        name,
        config,
        progress: flags.quiet ? null : process.stderr,
        note,
        signal,
      }),
    );
    printSummary(result, flags.json === true);
  });

  for (const stage of ["rce", "grpo"] as const) {
    const command = train
      .command(stage)
      .description(
        stage === "rce"
          ? "reward-weighted cross-entropy on rollouts: each trajectory a target weighted by softmax(reward / τ), τ scheduled"
          : "GRPO on rollouts: group-relative advantages over all trajectories of a query, a clipped ratio to a refreshed behaviour policy, KL to a frozen reference",
      )
      .option("--quiet", "no progress output")
      .option("--json", "print the result as JSON");
    const settings = bindSettings(
      command,
      stage === "rce"
        ? RlInputsSchema.extend(RceStageConfigSchema.shape)
        : RlInputsSchema.extend(GrpoStageConfigSchema.shape).superRefine(checkGrpoSettings),
      { fileOption: "config" },
    );
    const vlmSettings = bindSettings(command, VlmSettingsSchema, {
      fileOption: "vlm-config",
      fileHelp: "VLM backend settings file (JSON or YAML) for validation answers; flags override it",
    });
    command.action(async (flags: { quiet?: boolean; json?: boolean }, cmd: Command) => {
      const { rollouts, pools, dataset, embedding, init, reference, name, ...config } = resolve(cmd, settings);
      const vlm = resolve(cmd, vlmSettings);
      // `config` was parsed by this stage's own schema (bound above).
      const stageSettings = { stage, config } as RlStageSettings;
      const result = await withInterrupt(cmd, (ws, signal) =>
        runRlStage(ws, {
          ...stageSettings,
          inputs: { rollouts, pools, dataset, embedding, init, reference, name },
          vlm,
          progress: flags.quiet ? null : process.stderr,
          note,
          signal,
        }),
      );
      printRlSummary(result, flags.json === true);
    });
  }

  train
    .command("resume")
    .description(
      "continue an interrupted SFT, RCE or GRPO run from its last finished epoch (same result as an uninterrupted run)",
    )
    .argument("<run>", "training run: its id (e.g. sft-0003) or its --name")
    .option("--quiet", "no progress output")
    .option("--json", "print the result as JSON")
    .action(async (ref: string, flags: { quiet?: boolean; json?: boolean }, command: Command) => {
      const progress = flags.quiet ? null : process.stderr;
      await withInterrupt(command, async (ws, signal) => {
        const how = { progress, note, signal };
        const run = resolveTrainingRun(ws, ref);
        if (run.kind === "sft") printSummary(await resumeSftStage(ws, run.id, how), flags.json === true);
        else printRlSummary(await resumeRlStage(ws, run.id, how), flags.json === true);
      });
    });
}
