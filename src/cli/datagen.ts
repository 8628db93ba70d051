import type { Command } from "commander";
import {
  type BeamsResult,
  BeamsSettingsSchema,
  beamsInterrupted,
  failedAnchorsError,
  runBeams,
} from "../datagen/beams-stage.js";
import {
  failedTrajectoriesError,
  type RolloutsResult,
  RolloutsSettingsSchema,
  rolloutsInterrupted,
  runRollouts,
} from "../datagen/rollouts-stage.js";
import { formatDuration } from "../util/progress.js";
import { VlmSettingsSchema } from "../vlm/settings.js";
import { printJson } from "./common.js";
import { RERUN_TO_RESUME, withInterrupt } from "./interrupt.js";
import { bindSettings, resolve } from "./options.js";

/**
 * `lever beams` (InfoScore beam search → artifacts/beams/NAME.json, read by `lever train sft --beams`)
 * and `lever rollouts` (scored trajectories → artifacts/rollouts/NAME.json, for the RL stages).
 * Both resume where a killed run stopped: re-run the same command.
 */
export function register(program: Command): void {
  const beams = program
    .command("beams")
    .description(
      "InfoScore beam search: for each anchor and its stored pool, sequences of demonstrations that most raise log P(answer) under the VLM",
    )
    .option("--quiet", "no progress output")
    .option("--json", "print the summary as one JSON object");
  const beamSettings = bindSettings(beams, BeamsSettingsSchema, { fileOption: "config" });
  const beamVlm = bindVlm(beams);
  beams.action(async (flags: Flags, cmd: Command) => {
    const settings = resolve(cmd, beamSettings);
    const vlm = resolve(cmd, beamVlm);
    const result = await withInterrupt(cmd, (ws, signal) =>
      runBeams(ws, settings, vlm, { signal, progress: flags.quiet ? null : process.stderr, note }),
    );
    process.stderr.write(`${beamsLine(result)}\n`);
    if (result.aborted) throw beamsInterrupted(result, RERUN_TO_RESUME);
    if (result.failures.length > 0) throw failedAnchorsError(result);
    if (flags.json) printJson(result);
    else
      process.stdout.write(
        `wrote artifacts/${result.artifact?.path}: beams of ${result.anchors.planned} anchors ` +
          `(${result.requestsPerAnchor.mean.toFixed(1)} scored answers per anchor); best beam's InfoScore ` +
          `mean ${result.bestScore.mean.toFixed(3)} (min ${result.bestScore.min.toFixed(3)}, max ${result.bestScore.max.toFixed(3)}) ` +
          `over log P(answer | no demonstrations) mean ${result.baseLogprob.mean.toFixed(3)}\n`,
      );
  });

  const rollouts = program
    .command("rollouts")
    .description(
      "scored trajectories for RL: propose trajectories per query (checkpoint greedy/beam/samples, retrieval, random), answer and score them as lever eval does",
    )
    .option("--quiet", "no progress output")
    .option("--json", "print the summary as one JSON object");
  const rolloutSettings = bindSettings(rollouts, RolloutsSettingsSchema, { fileOption: "config" });
  const rolloutVlm = bindVlm(rollouts);
  rollouts.action(async (flags: Flags, cmd: Command) => {
    const settings = resolve(cmd, rolloutSettings);
    const vlm = resolve(cmd, rolloutVlm);
    const result = await withInterrupt(cmd, (ws, signal) =>
      runRollouts(ws, settings, vlm, { signal, progress: flags.quiet ? null : process.stderr, note }),
    );
    for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
    process.stderr.write(`${rolloutsLine(result)}\n`);
    if (result.aborted) throw rolloutsInterrupted(result, RERUN_TO_RESUME);
    if (flags.json) printJson(result);
    else process.stdout.write(`${renderRolloutStats(result)}\n`);
    if (result.stats.failed.trajectories > 0) throw failedTrajectoriesError(result);
  });
}

interface Flags {
  quiet?: boolean;
  json?: boolean;
}

function bindVlm(command: Command) {
  return bindSettings(command, VlmSettingsSchema, {
    fileOption: "vlm-config",
    fileHelp: "VLM backend settings file (JSON or YAML): any of the backend settings; flags override it",
  });
}

const note = (text: string) => process.stderr.write(`note: ${text}\n`);

function vlmPart(v: { calls: number; cacheHits: number; failures: number }): string {
  return `VLM: ${v.calls} calls, ${v.cacheHits} cache hits, ${v.failures} failures`;
}

function beamsLine(r: BeamsResult): string {
  const a = r.anchors;
  return (
    `run ${r.runId}${r.resumed ? " (resumed)" : ""}: ${a.planned} anchors, ${a.skipped} already stored, ${a.searched} searched, ` +
    `${a.failed} failed; scored answers per anchor ${r.requestsPerAnchor.mean.toFixed(1)} ` +
    `(min ${r.requestsPerAnchor.min}, max ${r.requestsPerAnchor.max}); ${vlmPart(r.vlm)}; ${formatDuration(r.seconds)}`
  );
}

function rolloutsLine(r: RolloutsResult): string {
  const q = r.queries;
  return (
    `run ${r.runId}${r.resumed ? " (resumed)" : ""}: ${q.planned} queries, ${q.skipped} already stored, ${q.processed} rolled out; ` +
    `${vlmPart(r.vlm)}; ${formatDuration(r.seconds)}`
  );
}

function renderRolloutStats(r: RolloutsResult): string {
  const s = r.stats;
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = [
    `wrote artifacts/${r.artifact?.path}: ${s.trajectories} trajectories of ${s.queries} queries`,
    `trajectories per query: min ${s.perQuery.min}, mean ${s.perQuery.mean.toFixed(2)}, max ${s.perQuery.max}`,
    `methods: ${Object.entries(s.methods)
      .map(([m, n]) => `${m} ${n}`)
      .join(", ")}`,
    `groups with all rewards equal: ${s.allEqualGroups} (${pct(s.allEqualShare)}); positives ${pct(s.positiveFraction)}`,
    `accuracy histogram: ${Object.entries(s.accuracyHistogram)
      .map(([acc, n]) => `${acc}: ${n}`)
      .join(", ")}`,
  ];
  if (s.topup !== null)
    lines.push(
      `top-up: ${s.topup.balanced} of ${s.topup.queries} groups balanced, ${s.topup.added} trajectories added`,
    );
  if (s.failed.trajectories > 0)
    lines.push(`failed: ${s.failed.trajectories} trajectories in ${s.failed.queries} queries (excluded from rewards)`);
  return lines.join("\n");
}
