import type { Command } from "commander";
import { SftConfigSchema } from "../train/sft-run.js";
import { resumeSftStage, runSftStage, SftInputsSchema, type SftStageResult } from "../train/sft-stage.js";
import { group, printJson, withWorkspace } from "./common.js";
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
        .map(([k, v]) => `${k} ${v.toFixed(4)}`)
        .join(", ")}\nbest checkpoint ${summary.bestCheckpoint}\n`,
  );
}

const note = (text: string) => process.stderr.write(`note: ${text}\n`);

/** Registers the `train` commands. */
export function register(program: Command): void {
  const train = group(program, "train", "train the pointer selector (SFT; RCE and GRPO build on the same loop)");
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
    const result = await withWorkspace(command, (ws) =>
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
      }),
    );
    printSummary(result, flags.json === true);
  });

  train
    .command("resume")
    .description(
      "continue an interrupted training run from its last finished epoch (same result as an uninterrupted run)",
    )
    .argument("<run>", "run id, e.g. sft-0003")
    .option("--quiet", "no progress output")
    .option("--json", "print the result as JSON")
    .action(async (runId: string, flags: { quiet?: boolean; json?: boolean }, command: Command) => {
      const result = await withWorkspace(command, (ws) =>
        resumeSftStage(ws, runId, flags.quiet ? null : process.stderr, note),
      );
      printSummary(result, flags.json === true);
    });
}
