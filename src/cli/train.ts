import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { Workspace } from "../store/workspace.js";
import { SftConfigSchema } from "../train/sft-run.js";
import { resumeSftStage, runSftStage, type SftStageResult } from "../train/sft-stage.js";
import { LeverError } from "../util/errors.js";
import { group, printJson, workspaceDir } from "./common.js";

interface SftFlags {
  beams: string;
  pools: string;
  dataset: string;
  embedding: string;
  config?: string;
  init?: string;
  name?: string;
  json?: boolean;
  quiet?: boolean;
  seed?: string;
  dtype?: string;
  epochs?: string;
  batchQueries?: string;
  lr?: string;
  weightDecay?: string;
  warmup?: string;
  schedule?: string;
  clipNorm?: string;
  freeze?: string;
  labelSmoothing?: string;
  valFraction?: string;
  weighting?: string;
  skipMissing?: boolean;
  shots?: string;
  hidden?: string;
  heads?: string;
  layers?: string;
  dropout?: string;
  attnDropout?: string;
  temperature?: string;
  stateUpdate?: string;
  stepEmbedding?: boolean;
  redundancy?: string;
  earlyStop?: string;
  patience?: string;
}

const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));

/** Config file (if any) overlaid by command-line flags, validated by the schema. */
function resolveConfig(flags: SftFlags) {
  let base: Record<string, unknown> = {};
  if (flags.config !== undefined) {
    try {
      base = JSON.parse(readFileSync(flags.config, "utf8"));
    } catch (error) {
      throw new LeverError(`cannot read JSON (${(error as Error).message})`, { file: flags.config });
    }
  }
  const section = (name: string) => ({ ...((base[name] as Record<string, unknown> | undefined) ?? {}) });
  const model = section("model");
  const optim = section("optim");
  const loss = section("loss");
  const data = section("data");
  const set = (target: Record<string, unknown>, key: string, value: unknown) => {
    if (value !== undefined) target[key] = value;
  };
  set(model, "hidden", num(flags.hidden));
  set(model, "heads", num(flags.heads));
  set(model, "layers", num(flags.layers));
  set(model, "dropout", num(flags.dropout));
  set(model, "attnDropout", num(flags.attnDropout));
  set(model, "temperature", num(flags.temperature));
  set(model, "stateUpdate", flags.stateUpdate);
  set(model, "stepEmbedding", flags.stepEmbedding);
  set(model, "redundancy", flags.redundancy);
  set(optim, "epochs", num(flags.epochs));
  set(optim, "batchQueries", num(flags.batchQueries));
  set(optim, "lr", num(flags.lr));
  set(optim, "weightDecay", num(flags.weightDecay));
  set(optim, "clipNorm", flags.clipNorm === "none" ? null : num(flags.clipNorm));
  set(
    optim,
    "frozen",
    flags.freeze?.split(",").map((s) => s.trim()),
  );
  if (flags.warmup !== undefined || flags.schedule !== undefined)
    optim.schedule = {
      ...((optim.schedule as Record<string, unknown> | undefined) ?? {}),
      ...(flags.schedule !== undefined ? { kind: flags.schedule } : {}),
      ...(flags.warmup !== undefined ? { warmupRatio: num(flags.warmup) } : {}),
    };
  if (flags.earlyStop !== undefined || flags.patience !== undefined) {
    const [metric, mode] = (flags.earlyStop ?? "valLoss:min").split(":");
    optim.earlyStopping = {
      ...((optim.earlyStopping as Record<string, unknown> | undefined) ?? {}),
      metric,
      mode: mode ?? (metric.toLowerCase().includes("loss") ? "min" : "max"),
      ...(flags.patience !== undefined ? { patience: num(flags.patience) } : {}),
    };
  }
  set(loss, "labelSmoothing", num(flags.labelSmoothing));
  set(data, "valFraction", num(flags.valFraction));
  set(data, "weighting", flags.weighting);
  set(data, "missing", flags.skipMissing ? "skip" : undefined);
  set(data, "shots", num(flags.shots));
  const merged = {
    ...base,
    model,
    optim,
    loss,
    data,
    ...(flags.seed !== undefined ? { seed: num(flags.seed) } : {}),
    ...(flags.dtype !== undefined ? { dtype: flags.dtype } : {}),
  };
  const parsed = SftConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LeverError(issue.message, {
      ...(flags.config ? { file: flags.config } : {}),
      field: issue.path.join("."),
    });
  }
  return parsed.data;
}

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

/** Registers the `train` commands. */
export function register(program: Command): void {
  const train = group(program, "train", "train the pointer selector (SFT; RCE and GRPO build on the same loop)");
  train
    .command("sft")
    .description("supervised training on beam data: labels = positions of each beam's ICDs in the query's pool")
    .requiredOption("--beams <artefact>", "beam artefact (file, or name under artifacts/beams/)")
    .requiredOption("--pools <artefact>", "pool set (file, or name under artifacts/pools/) the beams were searched in")
    .requiredOption("--dataset <name>", "index dataset (the candidates)")
    .requiredOption("--embedding <kind>", "embedding kind: image, text or joint")
    .option("--config <file.json>", "SFT config (model / optim / loss / data / seed); flags override it")
    .option("--init <ckpt>", "start from this selector checkpoint")
    .option("--name <name>", "run name")
    .option("--seed <n>", "seed (init, split, shuffling, dropout); default 42")
    .option("--dtype <t>", "float32 (default) or float64")
    .option("--epochs <n>", "epochs (default 20)")
    .option("--batch-queries <n>", "queries per batch, each with all its beams (default 32)")
    .option("--lr <x>", "peak learning rate (default 1e-4)")
    .option("--weight-decay <x>", "AdamW decoupled weight decay (default 1e-3)")
    .option("--schedule <kind>", "cosine (default) or constant")
    .option("--warmup <ratio>", "fraction of steps for linear warm-up (default 0.05)")
    .option("--clip-norm <x>", 'global gradient-norm clip, or "none" (default 1)')
    .option("--freeze <groups>", "comma-separated parameter groups not to update (e.g. input_proj,query_proj)")
    .option("--label-smoothing <x>", "label smoothing over the still-available positions (default 0)")
    .option("--val-fraction <x>", "share of queries held out for validation (default 0.1)")
    .option("--weighting <w>", "uniform (default) or rank (beam weight 1/(1+rank by score))")
    .option("--skip-missing", "skip (and count) beams whose ICDs are not in the query's pool instead of failing")
    .option("--shots <n>", "trajectory length (default: the beams' length; longer beams are cut)")
    .option("--hidden <n>", "hidden width H (default 256)")
    .option("--heads <n>", "attention heads (default 1)")
    .option("--layers <n>", "cross-attention layers (default 1)")
    .option("--dropout <p>", "dropout on query/candidate features (default 0.5)")
    .option("--attn-dropout <p>", "attention dropout (default 0.1)")
    .option("--temperature <t>", "pointer temperature (default 0.1)")
    .option("--state-update <kind>", "gate (V4-1, default), none (v2) or gru (V4-2)")
    .option("--step-embedding", "add the per-step embedding (V4-2/V4-3)")
    .option("--redundancy <kind>", "none (default) or max (V4-3 learnable MMR penalty)")
    .option(
      "--early-stop <metric[:mode]>",
      "metric to select the best epoch and stop on (default valLoss:min; e.g. valTop1:max)",
    )
    .option("--patience <n>", "epochs without improvement before stopping (default 0 = never)")
    .option("--quiet", "no progress output")
    .option("--json", "print the result as JSON")
    .action((flags: SftFlags, command: Command) => {
      const config = resolveConfig(flags);
      const ws = Workspace.open(workspaceDir(command), { create: false });
      try {
        const result = runSftStage(ws, {
          beams: flags.beams,
          pools: flags.pools,
          dataset: flags.dataset,
          embedding: flags.embedding,
          config,
          init: flags.init,
          name: flags.name,
          progress: flags.quiet ? null : process.stderr,
        });
        printSummary(result, flags.json === true);
      } finally {
        ws.close();
      }
    });

  train
    .command("resume")
    .description(
      "continue an interrupted training run from its last finished epoch (same result as an uninterrupted run)",
    )
    .argument("<run>", "run id, e.g. sft-0003")
    .option("--quiet", "no progress output")
    .option("--json", "print the result as JSON")
    .action((runId: string, flags: { quiet?: boolean; json?: boolean }, command: Command) => {
      const ws = Workspace.open(workspaceDir(command), { create: false });
      try {
        printSummary(resumeSftStage(ws, runId, flags.quiet ? null : process.stderr), flags.json === true);
      } finally {
        ws.close();
      }
    });
}
