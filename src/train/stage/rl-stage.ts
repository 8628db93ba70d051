/**
 * `lever train rce` and `lever train grpo` against a workspace — the stage's wiring: resolve the
 * rollout set (online GRPO: the pool set), the embeddings and every file the run reads
 * (src/train/stage/inputs.ts), build the RL groups (src/train/data/rl-groups.ts), the starting model and the KL
 * reference, the VLM when validation answers or online sampling need it (src/train/stage/rl-vlm.ts), and run
 * the stage's objective on the one training loop; a resumable workspace run with per-epoch
 * checkpoints, `best`, metrics and health warnings. Re-running the same command continues an
 * interrupted run of the same config. The settings are src/train/stage/rl-settings.ts; what the wiring does
 * differently per stage is the record `STAGES`.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { PoolSet } from "../../data/pool-set.js";
import type { PromptOrder, RolloutSet } from "../../data/trajectories.js";
import { resolveCheckpoint } from "../../icl/checkpoint-ref.js";
import { type Checkpoint, checkIndexFits, checkpointFits, loadCheckpoint } from "../../selector/checkpoint.js";
import type { IndexIdentity } from "../../selector/inputs.js";
import { PointerSelector } from "../../selector/model.js";
import { type ResolvedSet, resolvePoolSet, resolveRolloutSet } from "../../store/sets.js";
import { openStageRun } from "../../store/stage-run.js";
import type { Workspace } from "../../store/workspace.js";
import type { DType } from "../../tensor/tensor.js";
import { LeverError } from "../../util/errors.js";
import { hashValue } from "../../util/hash.js";
import { parseOrThrow } from "../../util/validate.js";
import { type VlmSettings, VlmSettingsSchema } from "../../vlm/settings.js";
import { buildOnlineGroups, buildRlGroups, type RlDataStats, type RlGroup } from "../data/rl-groups.js";
import type { Objective } from "../loop/loop.js";
import { runTraining, STATE_FILE, startingPoint, type TrainingRunResult } from "../loop/run.js";
import { loadTrainState } from "../loop/train-state.js";
import { grpoObjective } from "../objective/grpo.js";
import { belowStartWarnings, type HealthWarning, healthWarnings } from "../objective/health.js";
import type { OnlineSampler, ResolvedOnlineConfig } from "../objective/online.js";
import { type RlObjectiveData, rceObjective } from "../objective/rl-objectives.js";
import { RlValidator } from "../objective/rl-validate.js";
import { type TrainingInputs, trainingInputs } from "./inputs.js";
import {
  checkInputsUnchanged,
  checkpointDirOf,
  executeStage,
  imagesOf,
  type StageIo,
  type StageResult,
  splitNote,
} from "./lifecycle.js";
import {
  onlineOf,
  parseRlSettings,
  RANDOM_INIT,
  type ResolvedRlStageConfig,
  type ResolvedRlStageSettings,
  type RlInputs,
  RlInputsSchema,
  type RlStage,
  type RlStageSettings,
  resolveSettings,
} from "./rl-settings.js";
import { rlVlmServices } from "./rl-vlm.js";

/** What the wiring does differently per stage (`C`: the stage's resolved config). */
interface StageWiring<C> {
  /** Metrics shown on the per-epoch progress line. */
  display: readonly string[];
  /** The health checks of an epoch's metrics. */
  health(online: boolean): (epoch: number, metrics: Record<string, number>) => HealthWarning[];
  /** The groups trained on, of those built (`rollouts`: the rollout file offline, null online). */
  trainGroups(config: C, groups: RlGroup[], rollouts: string | null): RlGroup[];
  objective(
    config: C,
    model: PointerSelector,
    data: RlObjectiveData,
    reference: PointerSelector,
    sampler: OnlineSampler | undefined,
  ): Objective<RlGroup>;
}

const STAGES: { [S in RlStage]: StageWiring<ResolvedRlStageConfig<S>> } = {
  rce: {
    display: ["trainLoss", "temperature", "valRce", "valTop1", "selectionChange", "valAccuracy", "valAccuracyGain"],
    health: () => (epoch, m) => healthWarnings(epoch, { selectionChange: m.selectionChange }),
    trainGroups: (_config, groups) => groups,
    objective: (config, model, data) => rceObjective(model, data, config, config.reward),
  },
  grpo: {
    display: [
      "trainLoss",
      "policyLoss",
      "kl",
      "beta",
      "klShare",
      "advStd",
      "zeroVarianceShare",
      "clipLow",
      "clipHigh",
      "entropy",
      "sampledAccuracy",
      "valRce",
      "selectionChange",
      "valAccuracy",
      "valAccuracyGain",
    ],
    health: (online) => (epoch, m) => healthWarnings(epoch, m, { onPolicy: online }),
    trainGroups: (config, groups, rollouts) =>
      config.dropZeroVariance && rollouts !== null ? informativeGroups(groups, rollouts) : groups,
    objective: (config, model, data, reference, sampler) => grpoObjective(model, data, config, reference, sampler),
  },
};

/** Offline GRPO without the queries whose rewards are all equal (they carry no policy gradient). */
function informativeGroups(groups: RlGroup[], file: string): RlGroup[] {
  const kept = groups.filter((g) => !g.rewards.every((r) => r === g.rewards[0]));
  if (kept.length < 2)
    throw new LeverError(
      `${groups.length - kept.length} of ${groups.length} queries have all-equal rewards and carry no policy gradient; use a denser reward (--reward-mode hybrid) or more diverse rollouts`,
      { file },
    );
  return kept;
}

/** The data a run trains on: stored rollouts (with the pool set when given), or online, a pool set. */
type RlData =
  | { rollouts: ResolvedSet<RolloutSet>; pools: ResolvedSet<PoolSet> | null; online: null }
  | { rollouts: null; pools: ResolvedSet<PoolSet>; online: ResolvedOnlineConfig };

interface ResolvedRlInputs extends TrainingInputs {
  data: RlData;
  /** The dataset of the training queries (the rollouts' or the pools' queries). */
  queryDataset: string;
  promptOrder: PromptOrder;
}

function resolveInputs<S extends RlStage>(
  ws: Workspace,
  inputs: RlInputs,
  settings: ResolvedRlStageSettings<S>,
): ResolvedRlInputs {
  const { data, queryDataset, promptOrder } = resolveData(ws, inputs, onlineOf(settings));
  const resolved = trainingInputs(ws, {
    stage: "rl",
    data: {
      ...(data.rollouts !== null ? { rollouts: data.rollouts.file } : {}),
      ...(data.pools !== null ? { pools: data.pools.file } : {}),
    },
    pools: data.pools,
    queryDataset,
    indexDataset: inputs.dataset,
    embedding: inputs.embedding,
    checkpoints: { init: inputs.init, reference: inputs.reference },
    model: settings.config.model,
    rewardMode: settings.config.reward.mode,
  });
  return { ...resolved, data, queryDataset, promptOrder };
}

/** The run's data set(s), the dataset of its queries and their prompt order. */
function resolveData(
  ws: Workspace,
  inputs: RlInputs,
  online: ResolvedOnlineConfig | null,
): { data: RlData; queryDataset: string; promptOrder: PromptOrder } {
  if (online !== null) {
    if (inputs.pools === undefined)
      throw new LeverError("online GRPO samples from each query's pool: give --pools", { field: "--pools" });
    const pools = resolvePoolSet(ws, inputs.pools);
    const data: RlData = { rollouts: null, pools, online };
    return { data, queryDataset: pools.set.queryDataset, promptOrder: online.order };
  }
  if (inputs.rollouts === undefined)
    throw new LeverError("give the rollouts to train on (or train online with --online)", { field: "--rollouts" });
  const rollouts = resolveRolloutSet(ws, inputs.rollouts);
  const pools = inputs.pools !== undefined ? resolvePoolSet(ws, inputs.pools) : null;
  const data: RlData = { rollouts, pools, online: null };
  return { data, queryDataset: rollouts.set.dataset, promptOrder: rollouts.set.promptOrder };
}

export type RlStageOptions<S extends RlStage = RlStage> = RlStageSettings<S> & {
  inputs: RlInputs;
  vlm: VlmSettings;
} & StageIo;

export interface RlStageResult extends Omit<TrainingRunResult, "model"> {
  runId: string;
  resumed: boolean;
  checkpointDir: string;
  stats: RlDataStats;
  warnings: StageResult<TrainingRunResult>["warnings"];
  trainable: { parameters: number; total: number; frozen: string[] };
}

/** The stored run config: inputs (as resolved paths), their hashes, the stage config and the VLM settings. */
function storedConfig<S extends RlStage>(
  settings: ResolvedRlStageSettings<S>,
  inputs: RlInputs,
  hashes: Record<string, string>,
  vlm: VlmSettings,
) {
  const abs = (p: string | undefined) => (p !== undefined && existsSync(p) ? resolve(p) : p);
  return {
    stage: settings.stage,
    inputs: {
      ...inputs,
      rollouts: abs(inputs.rollouts),
      pools: abs(inputs.pools),
      init: abs(inputs.init),
      reference: abs(inputs.reference),
    },
    dataHashes: hashes,
    config: settings.config,
    vlm: settings.config.validation.answers || onlineOf(settings) !== null ? vlm : null,
  };
}

const StoredSchema = z.object({
  stage: z.enum(["rce", "grpo"]),
  inputs: RlInputsSchema,
  dataHashes: z.record(z.string(), z.string()),
  config: z.unknown(),
  vlm: z.unknown(),
});

/**
 * Runs an RL stage, or continues the run of the same stage, settings and inputs (src/store/stage-run.ts):
 * one that did not finish is continued from its last finished epoch, a done one's result is handed back.
 */
export async function runRlStage<S extends RlStage>(ws: Workspace, given: RlStageOptions<S>): Promise<RlStageResult> {
  const opts = { ...given, inputs: startingFiles(ws, given.stage, given.inputs) };
  const settings = resolveSettings<S>(opts);
  const { config } = settings;
  const inputs = resolveInputs(ws, opts.inputs, settings);
  // The embedding kind as resolved (given, else the --init checkpoint's): what the run's identity holds.
  const stored = storedConfig(settings, { ...opts.inputs, embedding: inputs.embedding }, inputs.dataHashes, opts.vlm);
  const opened = openStageRun(ws, {
    kind: opts.stage,
    config: stored,
    seed: config.seed,
    name: opts.inputs.name,
    work: "epochs",
    note: opts.note,
  });
  // An existing run goes on from its saved state: a done one's is final, so nothing is trained.
  const run = {
    id: opened.runId,
    resumed: opened.opened !== "new",
    progress: opts.progress,
    note: opts.note,
    signal: opts.signal,
  };
  const result = await execute(ws, run, settings, opts.inputs, inputs, opts.vlm);
  return opened.opened === "done" ? { ...result, resumed: false } : result;
}

/**
 * The starting checkpoint and the KL reference as files (a training run RUN[:best|last|epoch-N]
 * resolved to its file). A starting point is required: a checkpoint, or `random` for a seeded init
 * (stored as no checkpoint, as runs made before this was required).
 */
function startingFiles(ws: Workspace, stage: RlStage, inputs: RlInputs): RlInputs {
  const { init, reference, ...rest } = inputs;
  if (init === undefined)
    throw new LeverError(
      `${stage.toUpperCase()} starts from a checkpoint: give --init RUN (e.g. the SFT run: --init sft-0001) or a file, or --init random to train from a seeded random init`,
      { field: "--init" },
    );
  return {
    ...rest,
    ...(init !== RANDOM_INIT ? { init: resolveCheckpoint(ws, init, "--init") } : {}),
    ...(reference !== undefined ? { reference: resolveCheckpoint(ws, reference, "--reference") } : {}),
  };
}

/** Continues an interrupted RCE/GRPO run (`lever train resume RUN`); inputs must be unchanged. */
export async function resumeRlStage(ws: Workspace, runId: string, how: StageIo = {}): Promise<RlStageResult> {
  const run = ws.getRun(runId);
  if (run === undefined) throw new LeverError(`no run "${runId}" in this workspace`, { field: "run" });
  const parsed = StoredSchema.safeParse(run.config);
  if (!parsed.success || (run.kind !== "rce" && run.kind !== "grpo"))
    throw new LeverError(`run ${runId} is not an RCE or GRPO run`, { record: runId });
  const stage = parsed.data.stage;
  if (ws.getStage(runId, stage)?.status === "done")
    throw new LeverError(`run ${runId} is already done`, { record: runId });
  // Stored resolved, so resolving again changes nothing: the stage runs on the resolved type only.
  const settings = resolveSettings(
    parseRlSettings(stage, parsed.data.config, { record: runId, fieldPrefix: "config" }),
  );
  const inputs = resolveInputs(ws, parsed.data.inputs, settings);
  checkInputsUnchanged(runId, parsed.data.dataHashes, inputs.dataHashes);
  const vlm = parseOrThrow(VlmSettingsSchema, parsed.data.vlm ?? {}, { record: runId, fieldPrefix: "vlm" });
  return execute(ws, { id: runId, resumed: true, ...how }, settings, parsed.data.inputs, inputs, vlm);
}

/** The run being trained, whether it continues an interrupted one, and where it reports. */
interface RunHandle extends StageIo {
  id: string;
  resumed: boolean;
}

async function execute<S extends RlStage>(
  ws: Workspace,
  run: RunHandle,
  settings: ResolvedRlStageSettings<S>,
  refs: RlInputs,
  inputs: ResolvedRlInputs,
  vlmSettings: VlmSettings,
): Promise<RlStageResult> {
  const { config, stage } = settings;
  const wiring = STAGES[stage];
  const online = onlineOf(settings);
  const init = refs.init !== undefined ? loadCheckpoint(refs.init) : undefined;
  const { groups, stats } = rlGroups(ws, inputs, config, init?.shots);
  const { start, startModel, reference } = startAndReference(refs, inputs, config, stats.shots, init);
  const { answerer, sampler } = await rlVlmServices(ws, {
    queryDataset: inputs.queryDataset,
    indexDataset: refs.dataset,
    order: inputs.promptOrder,
    vlm: vlmSettings,
    seed: config.seed,
    validation: config.validation.answers,
    online,
    sampling: { sources: inputs.sources, shots: stats.shots, reward: config.reward },
    ...(run.note !== undefined ? { note: run.note } : {}),
  });
  const trainGroups = wiring.trainGroups(config, groups, inputs.data.rollouts?.file ?? null);
  const dropped = { count: groups.length - trainGroups.length, why: "with all-equal rewards (--drop-zero-variance)" };
  const resume = savedState(ws, run, stage);
  const done = await executeStage(
    ws,
    {
      stage,
      runId: run.id,
      epochs: config.optim.epochs,
      inputs: inputs.files,
      progress: run.progress,
      note: run.note,
      display: wiring.display,
      // The stage's own checks, and (every RL stage) an epoch history below the starting checkpoint.
      health: (epoch, metrics, history) => [
        ...wiring.health(online !== null)(epoch, metrics),
        ...belowStartWarnings(epoch, history, config.optim.epochs),
      ],
      signal: run.signal,
    },
    (dir, hooks) =>
      runTraining<RlGroup>({
        stage,
        groups: trainGroups,
        valFraction: config.data.valFraction,
        imageOf: imagesOf(ws, inputs.queryDataset),
        seed: config.seed,
        dtype: config.dtype,
        optim: config.optim,
        start,
        resume,
        objective: (model, data) => {
          const validator = new RlValidator(
            {
              groups: data.val,
              sources: inputs.sources,
              shots: stats.shots,
              batchQueries: config.optim.batchQueries,
              answerer,
            },
            startModel,
          );
          const objData = {
            train: data.train,
            sources: inputs.sources,
            batchQueries: config.optim.batchQueries,
            validator,
          };
          return wiring.objective(config, model, objData, reference, sampler);
        },
        checkpointDir: dir,
        checkpoint: { trainedK: stats.K, shots: stats.shots, provenance: provenance(run.id, config, refs, inputs) },
        signal: hooks.signal,
        onSplit: (split) => hooks.note?.(splitNote(stage, split, config.seed, dropped)),
        onStep: hooks.onStep,
        onEpoch: hooks.onEpoch,
      }),
  );
  const { model: _model, ...rest } = done.result;
  return {
    ...rest,
    runId: run.id,
    resumed: run.resumed,
    checkpointDir: done.checkpointDir,
    stats,
    warnings: done.warnings,
    trainable: trainableCount(startModel, config.optim.frozen),
  };
}

/** The run's groups: from the rollouts, or (online) the chosen queries of the pool set without trajectories. */
function rlGroups(
  ws: Workspace,
  inputs: ResolvedRlInputs,
  config: ResolvedRlStageConfig,
  initShots: number | undefined,
): { groups: RlGroup[]; stats: RlDataStats } {
  const { data } = inputs;
  if (data.rollouts !== null) {
    const built = buildRlGroups(data.rollouts.set, data.pools?.set ?? null, inputs.sources, {
      reward: config.reward,
      shots: config.data.shots,
      files: { rollouts: data.rollouts.file, pools: data.pools?.file ?? data.rollouts.file },
    });
    if (built.groups.length === 0)
      throw new LeverError("no query has a scored trajectory", { file: data.rollouts.file });
    return built;
  }
  const shots = config.data.shots ?? initShots;
  if (shots === undefined)
    throw new LeverError("online GRPO needs the number of shots: give --shots or start from a checkpoint (--init)", {
      field: "--shots",
    });
  const items = ws.loadItems(inputs.queryDataset);
  const built = buildOnlineGroups(items, data.pools.set, inputs.sources, data.online.queries, config.seed, shots);
  if (built.groups.length === 0) throw new LeverError("no query has a scored trajectory");
  return built;
}

/** The frozen KL reference checkpoint, when one is named (else the starting weights are the reference). */
function klReference(
  file: string | undefined,
  fit: { d: number; shots: number; dtype: DType; index: IndexIdentity | undefined },
): PointerSelector | undefined {
  if (file === undefined) return undefined;
  const checkpoint = loadCheckpoint(file);
  checkpointFits(checkpoint.config, fit.d, fit.shots, "KL reference", file);
  checkIndexFits(checkpoint, fit.index, file);
  return new PointerSelector(checkpoint.config, checkpoint.params, fit.dtype);
}

/** The run's starting point and its KL reference (the --reference checkpoint, else the start itself). */
function startAndReference(
  refs: RlInputs,
  inputs: ResolvedRlInputs,
  config: ResolvedRlStageConfig,
  shots: number,
  init: Checkpoint | undefined,
) {
  const d = inputs.sources.query.dim;
  const { index, voteScale } = inputs.sources.candidates ?? {};
  const start = startingPoint({
    init,
    initFile: refs.init,
    model: config.model,
    d,
    shots,
    seed: config.seed,
    index,
    voteScale,
  });
  const startModel = new PointerSelector(start.config, start.values, config.dtype);
  const reference = klReference(refs.reference, { d, shots, dtype: config.dtype, index: start.index }) ?? startModel;
  return { start, startModel, reference };
}

/** The state saved after the last finished epoch of an interrupted run, if any. */
function savedState(ws: Workspace, run: RunHandle, stage: RlStage) {
  const statePath = join(checkpointDirOf(ws, run.id, stage), STATE_FILE);
  return run.resumed && existsSync(statePath) ? loadTrainState(statePath) : undefined;
}

/** What every checkpoint of the run records of where it came from. */
function provenance(runId: string, config: ResolvedRlStageConfig, refs: RlInputs, inputs: ResolvedRlInputs) {
  const { pools } = inputs.data;
  return {
    runId,
    dataHashes: inputs.dataHashes,
    notes: {
      promptOrder: inputs.promptOrder,
      configHash: hashValue(config),
      parent: refs.init !== undefined ? resolve(refs.init) : "seeded init",
      ...(pools !== null ? { poolSampler: pools.set.sampler } : {}),
      embedding: inputs.embedding,
    },
  };
}

/** Trainable and total parameter counts of the model with `frozen` groups. */
function trainableCount(model: PointerSelector, frozen: string[]): RlStageResult["trainable"] {
  const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);
  const parameters = model.specs.filter((s) => !frozen.includes(s.group)).reduce((n, s) => n + size(s.shape), 0);
  const total = model.specs.reduce((n, s) => n + size(s.shape), 0);
  return { parameters, total, frozen };
}
