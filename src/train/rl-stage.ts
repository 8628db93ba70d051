/**
 * `lever train rce` and `lever train grpo` against a workspace: resolve the rollout set, the pool set
 * and the embeddings, build the RL groups (src/train/rl-data.ts), the starting model and the KL
 * reference, the validator (with the VLM when `validation.answers`), and run the stage's objective
 * on the one training loop; a resumable workspace run with per-epoch checkpoints, `best`, metrics and
 * health warnings. Re-running the same command continues an interrupted run of the same config.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import type { PoolSet } from "../data/pool-set.js";
import { selectSubset } from "../data/splits.js";
import type { PromptOrder, RolloutSet } from "../data/trajectories.js";
import { answerPrompts, buildPrompt, vqaAnswering } from "../icl/answer.js";
import { createVlm } from "../icl/backend.js";
import { RewardSchema } from "../icl/rewards.js";
import { type Checkpoint, checkpointFits, loadCheckpoint } from "../selector/checkpoint.js";
import { SelectorConfigSchema } from "../selector/config.js";
import { PointerSelector } from "../selector/model.js";
import { initParams } from "../selector/params.js";
import { hashFileSync } from "../store/files.js";
import { type ResolvedSet, resolvePoolSet, resolveRolloutSet } from "../store/sets.js";
import { openStageRun } from "../store/stage-run.js";
import type { ArtifactRef, Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { Rng } from "../util/rng.js";
import { parseOrThrow } from "../util/validate.js";
import { type VlmSettings, VlmSettingsSchema } from "../vlm/settings.js";
import { preflight, type Vlm } from "../vlm/types.js";
import type { EmbeddingTable } from "./data.js";
import { healthWarnings } from "./health.js";
import { optimSchema } from "./loop.js";
import { type OnlineConfig, OnlineSampler } from "./online.js";
import type { ProgressStream } from "./progress.js";
import { buildRlGroups, type RlDataStats, type RlGroup } from "./rl-data.js";
import { GrpoSchema, grpoObjective, RceSchema, rceObjective } from "./rl-objectives.js";
import { type Answerer, RlValidator } from "./rl-validate.js";
import { runTraining, STATE_FILE, TrainingFields, type TrainingRunResult } from "./run.js";
import {
  checkInputsUnchanged,
  checkpointDirOf,
  embeddingTable,
  executeStage,
  imagesOf,
  type StageResult,
} from "./stage.js";
import { loadTrainState } from "./train-state.js";

/** What an RL run reads (not part of the hashed training config). */
export const RlInputsSchema = z
  .object({
    rollouts: z
      .string()
      .min(1)
      .optional()
      .describe("rollout set: a name under artifacts/rollouts/, or a file (not needed with --online)"),
    pools: z
      .string()
      .min(1)
      .optional()
      .describe(
        "pool set the rollouts were drawn from (needed when the rollouts do not carry their pools, and with --online)",
      ),
    dataset: z.string().min(1).describe("index dataset (the candidates)"),
    embedding: z.enum(EMBEDDING_KINDS).default("joint").describe("embedding kind the selector reads"),
    init: z
      .string()
      .min(1)
      .optional()
      .describe("starting checkpoint (e.g. the SFT best); without it the model starts from a seeded init"),
    reference: z
      .string()
      .min(1)
      .optional()
      .describe("GRPO: frozen KL reference checkpoint (default: the starting weights)"),
    name: z.string().min(1).optional().describe("run name"),
  })
  .strict();
export type RlInputs = z.output<typeof RlInputsSchema>;

const RlDataSchema = z
  .object({
    valFraction: TrainingFields.valFraction,
    shots: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("trajectory length (default: the rollouts' length; longer trajectories are cut)"),
  })
  .strict();

const ValidationSchema = z
  .object({
    answers: z
      .boolean()
      .default(true)
      .describe(
        "answer the validation queries with the VLM after every epoch (valAccuracy: the honest selection metric; cached)",
      ),
  })
  .strict();

const common = {
  model: TrainingFields.model,
  reward: RewardSchema.meta({ flagPrefix: "reward" }).default(RewardSchema.parse({})),
  data: RlDataSchema.default(RlDataSchema.parse({})),
  validation: ValidationSchema.meta({ flagPrefix: "validation" }).default(ValidationSchema.parse({})),
  seed: TrainingFields.seed,
  dtype: TrainingFields.dtype,
};

/**
 * "auto" selects the best epoch by valAccuracy when the VLM answers the validation queries, by valRce
 * otherwise (see `resolveMetric`).
 */
const AUTO_METRIC = "auto";

/** The RL stages' optimiser defaults: 5 epochs, weight decay 0.01, constant LR, the "auto" best-epoch metric. */
const rlOptim = (lr: number) =>
  optimSchema({
    epochs: 5,
    lr,
    weightDecay: 0.01,
    schedule: { kind: "constant", warmupRatio: 0, minLrRatio: 0 },
    metric: AUTO_METRIC,
  });

const rceOptim = rlOptim(1e-4);
export const RceStageConfigSchema = z
  .object({
    ...common,
    optim: rceOptim.default(rceOptim.parse({})),
    ...RceSchema.shape,
  })
  .strict();
export type RceStageConfig = z.output<typeof RceStageConfigSchema>;

const grpoOptim = rlOptim(3e-5);
export const GrpoStageConfigSchema = z
  .object({
    ...common,
    optim: grpoOptim.default(grpoOptim.parse({})),
    ...GrpoSchema.shape,
  })
  .strict();
export type GrpoStageConfig = z.output<typeof GrpoStageConfigSchema>;

export type RlStage = "rce" | "grpo";
export type RlStageConfig = RceStageConfig | GrpoStageConfig;

/** Metrics shown on the per-epoch progress line. */
const DISPLAY: Record<RlStage, string[]> = {
  rce: ["trainLoss", "temperature", "valRce", "valTop1", "selectionChange", "valAccuracy", "valAccuracyGain"],
  grpo: [
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
};

/**
 * The GRPO settings' cross-field problem, if any (one source for the schemas' refinements and the stage):
 * prefix credit needs the VLM's answers to every prefix (online) and one advantage per step (step ratios).
 */
export function grpoSettingsProblem(s: {
  online: { enabled: boolean; credit: string };
  loss: { ratioLevel: string };
}): { path: string[]; message: string } | null {
  if (s.online.credit !== "prefix") return null;
  if (!s.online.enabled)
    return {
      path: ["online", "credit"],
      message:
        "prefix credit asks the VLM about every prefix, so it trains online only: add --online (in an experiment file, use the online: section) or set online.credit to trajectory",
    };
  if (s.loss.ratioLevel !== "step")
    return {
      path: ["loss", "ratioLevel"],
      message:
        "prefix credit gives every step its own advantage: set loss.ratioLevel to step (or online.credit to trajectory)",
    };
  return null;
}

/** `grpoSettingsProblem` as a zod refinement. */
export function checkGrpoSettings(s: Parameters<typeof grpoSettingsProblem>[0], ctx: z.RefinementCtx): void {
  const problem = grpoSettingsProblem(s);
  if (problem) ctx.addIssue({ code: "custom", ...problem });
}

/** The stage's cross-field checks, then the "auto" best-epoch metric resolved. */
export function resolveMetric(config: RlStageConfig): RlStageConfig {
  const online = "online" in config && config.online.enabled;
  const problem = "online" in config ? grpoSettingsProblem(config) : null;
  if (problem) throw new LeverError(problem.message, { field: problem.path.join(".") });
  if (config.optim.earlyStopping.metric !== AUTO_METRIC) return config;
  if (online && !config.validation.answers)
    throw new LeverError(
      "online GRPO has no stored trajectories to validate on, so its best epoch needs the VLM's answers: keep validation.answers on, or name a metric (optim.earlyStopping.metric)",
      { field: "validation.answers" },
    );
  const metric = config.validation.answers ? "valAccuracy" : "valRce";
  return { ...config, optim: { ...config.optim, earlyStopping: { ...config.optim.earlyStopping, metric } } };
}

interface ResolvedRlInputs {
  /** The offline data; null for online GRPO. */
  rollouts: { set: RolloutSet; file: string } | null;
  /** The dataset of the training queries (the rollouts' or the pools' queries). */
  queryDataset: string;
  promptOrder: PromptOrder;
  pools: { set: PoolSet; file: string } | null;
  queryEmb: EmbeddingTable;
  indexEmb: EmbeddingTable;
  dataHashes: Record<string, string>;
  /** Every file the run reads, recorded with the run. */
  files: ArtifactRef[];
}

function resolveInputs(ws: Workspace, inputs: RlInputs, online: OnlineConfig | null): ResolvedRlInputs {
  if (online === null && inputs.rollouts === undefined)
    throw new LeverError("give the rollouts to train on (or train online with --online)", { field: "--rollouts" });
  if (online !== null && inputs.pools === undefined)
    throw new LeverError("online GRPO samples from each query's pool: give --pools", { field: "--pools" });
  const rollouts = online === null && inputs.rollouts !== undefined ? resolveRolloutSet(ws, inputs.rollouts) : null;
  const pools = inputs.pools !== undefined ? resolvePoolSet(ws, inputs.pools) : null;
  if (pools !== null && pools.set.indexDataset !== inputs.dataset)
    throw new LeverError(`pools draw candidates from "${pools.set.indexDataset}", not --dataset "${inputs.dataset}"`, {
      file: pools.file,
      field: "indexDataset",
    });
  const indexEmb = embeddingTable(ws, inputs.dataset, inputs.embedding);
  const queryDataset = rollouts?.set.dataset ?? (pools as ResolvedSet<PoolSet>).set.queryDataset;
  const queryEmb = queryDataset === inputs.dataset ? indexEmb : embeddingTable(ws, queryDataset, inputs.embedding);
  const file = (path: string): ArtifactRef => ({ path: resolve(path), sha256: hashFileSync(path).sha256 });
  const embedding = (dataset: string): ArtifactRef => {
    const record = ws.getEmbedding(dataset, inputs.embedding);
    if (record === undefined) throw new LeverError(`dataset "${dataset}" has no ${inputs.embedding} embedding`);
    return { path: ws.resolveArtifact(record.path), sha256: record.sha256 };
  };
  const files: Record<string, ArtifactRef> = {
    ...(rollouts !== null ? { rollouts: file(rollouts.file) } : {}),
    ...(pools !== null ? { pools: file(pools.file) } : {}),
    indexEmbedding: embedding(inputs.dataset),
    queryEmbedding: embedding(queryDataset),
    ...(inputs.init !== undefined ? { init: file(inputs.init) } : {}),
    ...(inputs.reference !== undefined ? { reference: file(inputs.reference) } : {}),
  };
  const dataHashes = Object.fromEntries(Object.entries(files).map(([name, f]) => [name, f.sha256]));
  const promptOrder = rollouts?.set.promptOrder ?? (online?.order as PromptOrder);
  return { rollouts, queryDataset, promptOrder, pools, queryEmb, indexEmb, dataHashes, files: Object.values(files) };
}

export interface RlStageOptions {
  stage: RlStage;
  inputs: RlInputs;
  config: RlStageConfig;
  vlm: VlmSettings;
  progress?: ProgressStream | null;
  /** Informational lines (a resumed run, a lease taken over). */
  note?: (text: string) => void;
}

export interface RlStageResult extends Omit<TrainingRunResult, "model"> {
  runId: string;
  resumed: boolean;
  checkpointDir: string;
  stats: RlDataStats;
  warnings: StageResult<TrainingRunResult>["warnings"];
  trainable: { parameters: number; total: number; frozen: string[] };
}

/** The stored run config: inputs (as resolved paths), their hashes, the stage config and the VLM settings. */
function storedConfig(
  stage: RlStage,
  inputs: RlInputs,
  hashes: Record<string, string>,
  config: RlStageConfig,
  vlm: VlmSettings,
) {
  const abs = (p: string | undefined) => (p !== undefined && existsSync(p) ? resolve(p) : p);
  return {
    stage,
    inputs: {
      ...inputs,
      rollouts: abs(inputs.rollouts),
      pools: abs(inputs.pools),
      init: abs(inputs.init),
      reference: abs(inputs.reference),
    },
    dataHashes: hashes,
    config,
    vlm: config.validation.answers || onlineOf(stage, config) !== null ? vlm : null,
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
export async function runRlStage(ws: Workspace, opts: RlStageOptions): Promise<RlStageResult> {
  const config = resolveMetric(opts.config);
  const inputs = resolveInputs(ws, opts.inputs, onlineOf(opts.stage, config));
  const stored = storedConfig(opts.stage, opts.inputs, inputs.dataHashes, config, opts.vlm);
  const run = openStageRun(ws, {
    kind: opts.stage,
    config: stored,
    seed: config.seed,
    name: opts.inputs.name,
    work: "epochs",
    note: opts.note,
  });
  // An existing run goes on from its saved state: a done one's is final, so nothing is trained.
  const result = await execute(
    ws,
    run.runId,
    opts.stage,
    opts.inputs,
    inputs,
    config,
    opts.vlm,
    run.opened !== "new",
    opts.progress,
    opts.note,
  );
  return run.opened === "done" ? { ...result, resumed: false } : result;
}

/** Continues an interrupted RCE/GRPO run (`lever train resume RUN`); inputs must be unchanged. */
export async function resumeRlStage(
  ws: Workspace,
  runId: string,
  progress?: ProgressStream | null,
  note?: (text: string) => void,
): Promise<RlStageResult> {
  const run = ws.getRun(runId);
  if (run === undefined) throw new LeverError(`no run "${runId}" in this workspace`, { field: "run" });
  const parsed = StoredSchema.safeParse(run.config);
  if (!parsed.success || (run.kind !== "rce" && run.kind !== "grpo"))
    throw new LeverError(`run ${runId} is not an RCE or GRPO run`, { record: runId });
  const stage = parsed.data.stage;
  if (ws.getStage(runId, stage)?.status === "done")
    throw new LeverError(`run ${runId} is already done`, { record: runId });
  const schema = stage === "rce" ? RceStageConfigSchema : GrpoStageConfigSchema;
  const config = parseOrThrow(schema, parsed.data.config, { record: runId, fieldPrefix: "config" });
  const inputs = resolveInputs(ws, parsed.data.inputs, onlineOf(stage, config));
  checkInputsUnchanged(runId, parsed.data.dataHashes, inputs.dataHashes);
  const vlm = parseOrThrow(VlmSettingsSchema, parsed.data.vlm ?? {}, { record: runId, fieldPrefix: "vlm" });
  return execute(ws, runId, stage, parsed.data.inputs, inputs, config, vlm, true, progress, note);
}

async function execute(
  ws: Workspace,
  runId: string,
  stage: RlStage,
  refs: RlInputs,
  inputs: ResolvedRlInputs,
  config: RlStageConfig,
  vlmSettings: VlmSettings,
  resumed: boolean,
  progress?: ProgressStream | null,
  note?: (text: string) => void,
): Promise<RlStageResult> {
  const online = onlineOf(stage, config);
  const init: Checkpoint | undefined = refs.init !== undefined ? loadCheckpoint(refs.init) : undefined;
  const { groups, stats } =
    inputs.rollouts !== null
      ? buildRlGroups(inputs.rollouts.set, inputs.pools?.set ?? null, inputs.queryEmb, inputs.indexEmb, {
          reward: config.reward,
          shots: config.data.shots,
          files: { rollouts: inputs.rollouts.file, pools: inputs.pools?.file ?? inputs.rollouts.file },
        })
      : onlineGroups(ws, inputs, online as OnlineConfig, config.data.shots ?? init?.shots, config.seed);
  if (groups.length === 0) throw new LeverError("no query has a scored trajectory", { file: inputs.rollouts?.file });
  if (inputs.queryEmb.dim !== inputs.indexEmb.dim)
    throw new LeverError(`query embeddings have dim ${inputs.queryEmb.dim}, candidates ${inputs.indexEmb.dim}`);
  const modelConfig = init
    ? init.config
    : SelectorConfigSchema.parse({ ...config.model, d: inputs.queryEmb.dim, shots: stats.shots });
  checkpointFits(modelConfig, inputs.queryEmb.dim, stats.shots, "starting", refs.init);
  const startValues = init ? init.params : initParams(modelConfig, new Rng(config.seed).child("init").seed);
  const start = new PointerSelector(modelConfig, startValues, config.dtype);
  const referenceCkpt = refs.reference !== undefined ? loadCheckpoint(refs.reference) : undefined;
  if (referenceCkpt !== undefined)
    checkpointFits(referenceCkpt.config, inputs.queryEmb.dim, stats.shots, "KL reference", refs.reference);
  const reference = referenceCkpt
    ? new PointerSelector(referenceCkpt.config, referenceCkpt.params, config.dtype)
    : start;
  const poolOf = new Map<string, readonly string[]>(Object.entries(inputs.pools?.set.pools ?? {}));
  for (const [id, q] of Object.entries(inputs.rollouts?.set.queries ?? {})) if (q.pool) poolOf.set(id, q.pool);
  const vlmCtx =
    config.validation.answers || online !== null
      ? vlmContext(
          ws,
          inputs,
          refs.dataset,
          vlmSettings,
          config.seed,
          online?.gtAnswers !== undefined && online.gtAnswers !== "none",
        )
      : null;
  const answerer = config.validation.answers && vlmCtx !== null ? makeAnswerer(vlmCtx) : undefined;
  const sampler =
    online !== null && vlmCtx !== null
      ? new OnlineSampler(online, {
          queryEmb: inputs.queryEmb,
          indexEmb: inputs.indexEmb,
          shots: stats.shots,
          reward: config.reward,
          queryById: vlmCtx.queryById,
          indexById: vlmCtx.indexById,
          poolIds: (g) => poolOf.get(g.queryId) ?? [],
          answer: { vlm: vlmCtx.vlm, ...vlmCtx.answering },
        })
      : undefined;
  if (vlmCtx !== null) await vlmCtx.ready();
  const checkpointDir = checkpointDirOf(ws, runId, stage);
  const statePath = join(checkpointDir, STATE_FILE);
  const resume = resumed && existsSync(statePath) ? loadTrainState(statePath) : undefined;
  const frozen = config.optim.frozen;
  const trainableCount = start.specs
    .filter((s) => !frozen.includes(s.group))
    .reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
  const totalCount = start.specs.reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
  let trainGroups = groups;
  if (stage === "grpo" && (config as GrpoStageConfig).dropZeroVariance && online === null) {
    trainGroups = groups.filter((g) => !g.rewards.every((r) => r === g.rewards[0]));
    if (trainGroups.length < 2)
      throw new LeverError(
        `${groups.length - trainGroups.length} of ${groups.length} queries have all-equal rewards and carry no policy gradient; use a denser reward (--reward-mode hybrid) or more diverse rollouts`,
        { file: inputs.rollouts?.file },
      );
  }
  const done = await executeStage(
    ws,
    {
      stage,
      runId,
      epochs: config.optim.epochs,
      inputs: inputs.files,
      progress,
      note,
      display: DISPLAY[stage],
      health:
        stage === "grpo"
          ? (epoch, m) => healthWarnings(epoch, m, { onPolicy: online !== null })
          : (epoch, m) => healthWarnings(epoch, { selectionChange: m.selectionChange }),
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
        modelConfig,
        init,
        resume,
        objective: (model, data) => {
          const validator = new RlValidator(
            {
              groups: data.val,
              queryEmb: inputs.queryEmb,
              indexEmb: inputs.indexEmb,
              shots: stats.shots,
              batchQueries: config.optim.batchQueries,
              poolIds: (g) => poolOf.get(g.queryId) ?? [],
              answerer,
            },
            start,
          );
          const objData = {
            train: data.train,
            queryEmb: inputs.queryEmb,
            indexEmb: inputs.indexEmb,
            batchQueries: config.optim.batchQueries,
            validator,
          };
          return stage === "rce"
            ? rceObjective(model, objData, config as RceStageConfig, config.reward)
            : grpoObjective(model, objData, config as GrpoStageConfig, reference, sampler);
        },
        checkpointDir: dir,
        checkpoint: {
          trainedK: stats.K,
          shots: stats.shots,
          provenance: {
            runId,
            dataHashes: inputs.dataHashes,
            notes: {
              promptOrder: inputs.promptOrder,
              configHash: hashValue(config),
              parent: refs.init !== undefined ? resolve(refs.init) : "seeded init",
              ...(inputs.pools !== null ? { poolSampler: inputs.pools.set.sampler } : {}),
              embedding: refs.embedding,
            },
          },
        },
        onStep: hooks.onStep,
        onEpoch: hooks.onEpoch,
      }),
  );
  const { model: _model, ...rest } = done.result;
  return {
    ...rest,
    runId,
    resumed,
    checkpointDir: done.checkpointDir,
    stats,
    warnings: done.warnings,
    trainable: { parameters: trainableCount, total: totalCount, frozen },
  };
}

/** The VLM with the items and settings the validation answers and online sampling use. */
interface VlmContext {
  vlm: Vlm;
  queryById: ReadonlyMap<string, VqaItem>;
  indexById: ReadonlyMap<string, VqaItem>;
  order: PromptOrder;
  answering: ReturnType<typeof vqaAnswering>;
  /** Checks the server once (a no-op for the simulator). */
  ready(): Promise<void>;
}

function vlmContext(
  ws: Workspace,
  inputs: ResolvedRlInputs,
  indexDataset: string,
  settings: VlmSettings,
  seed: number,
  scoring: boolean,
): VlmContext {
  const index = ws.loadItems(indexDataset);
  const queries = inputs.queryDataset === indexDataset ? index : ws.loadItems(inputs.queryDataset);
  const { vlm } = createVlm(ws, settings, ws.requireDataset(inputs.queryDataset), { seed });
  let checked: Promise<void> | null = null;
  return {
    vlm,
    queryById: new Map(queries.map((item) => [item.questionId, item])),
    indexById: new Map(index.map((item) => [item.questionId, item])),
    order: inputs.promptOrder,
    answering: vqaAnswering("official"),
    ready: () => {
      checked ??= preflight(vlm, { scoring });
      return checked;
    },
  };
}

/** Answers validation queries through the one answering path, for valAccuracy. */
function makeAnswerer(ctx: VlmContext): Answerer {
  return async (queryIds, selections) => {
    const items = queryIds.map((id) => {
      const item = ctx.queryById.get(id);
      if (item === undefined) throw new LeverError(`validation query "${id}" is not in the query dataset`);
      return item;
    });
    const prompts = items.map((item, i) => buildPrompt(item, selections[i], ctx.indexById, ctx.order));
    const answers = await answerPrompts(prompts, items, { vlm: ctx.vlm, ...ctx.answering });
    if (answers === null) throw new LeverError("validation was interrupted");
    return answers.map((a) => a.accuracy);
  };
}

/** The online stage's configuration, or null (RCE, offline GRPO). */
function onlineOf(stage: RlStage, config: RlStageConfig): OnlineConfig | null {
  if (stage !== "grpo") return null;
  const online = (config as GrpoStageConfig).online;
  return online.enabled ? online : null;
}

/** Online GRPO's groups: the chosen queries of the pool set with their pools, no trajectories yet. */
function onlineGroups(
  ws: Workspace,
  inputs: ResolvedRlInputs,
  online: OnlineConfig,
  shots: number | undefined,
  seed: number,
): { groups: RlGroup[]; stats: RlDataStats } {
  if (shots === undefined)
    throw new LeverError("online GRPO needs the number of shots: give --shots or start from a checkpoint (--init)", {
      field: "--shots",
    });
  const pools = (inputs.pools as ResolvedSet<PoolSet>).set;
  const items = ws.loadItems(inputs.queryDataset).filter((item) => pools.pools[item.questionId] !== undefined);
  const chosen = selectSubset(items, online.queries, seed);
  const groups: RlGroup[] = chosen.map((item) => {
    const queryRow = inputs.queryEmb.rowOf.get(item.questionId);
    if (queryRow === undefined) throw new LeverError("query has no embedding row", { record: item.questionId });
    const candRows = Int32Array.from(pools.pools[item.questionId], (id) => {
      const row = inputs.indexEmb.rowOf.get(id);
      if (row === undefined)
        throw new LeverError(`candidate "${id}" has no embedding row`, { record: item.questionId, field: "pools" });
      return row;
    });
    return {
      queryId: item.questionId,
      queryRow,
      candRows,
      trajectories: [],
      rewards: [],
      methods: [],
      weights: [],
      best: 0,
    };
  });
  return {
    groups,
    stats: {
      queries: groups.length,
      trajectories: 0,
      shots,
      K: pools.k,
      failedTrajectories: 0,
      droppedQueries: 0,
      zeroVarianceQueries: 0,
      positiveFraction: Number.NaN,
    },
  };
}
