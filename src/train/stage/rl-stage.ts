/**
 * `lever train rce` and `lever train grpo` against a workspace — the stage: resolve what the run reads
 * (src/train/stage/rl-inputs.ts: the rollout set, or online the pool set, the embeddings and every file
 * the run reads, and the RL groups), open or continue the run of its stored config
 * (src/train/stage/rl-record.ts), build the starting model and the KL reference
 * (src/train/stage/rl-start.ts), open the VLM when validation answers or online sampling need it
 * (src/train/stage/rl-vlm.ts), and run the stage's objective (src/train/stage/rl-wiring.ts: what differs
 * per stage) on the one training loop through the training-stage lifecycle (src/train/stage/lifecycle.ts):
 * a resumable workspace run with per-epoch checkpoints, `best`, metrics and health warnings. Re-running
 * the same command continues an interrupted run of the same config. The settings are
 * src/train/stage/rl-settings.ts.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadCheckpoint } from "../../selector/checkpoint.js";
import { openStageRun } from "../../store/stage-run.js";
import type { Workspace } from "../../store/workspace.js";
import { LeverError } from "../../util/errors.js";
import { parseOrThrow } from "../../util/validate.js";
import { type VlmSettings, VlmSettingsSchema } from "../../vlm/settings.js";
import type { RlDataStats, RlGroup } from "../data/rl-groups.js";
import { runTraining, STATE_FILE, type TrainingRunResult } from "../loop/run.js";
import { loadTrainState } from "../loop/train-state.js";
import { belowStartWarnings } from "../objective/health.js";
import { RlValidator } from "../objective/rl-validate.js";
import {
  checkInputsUnchanged,
  checkpointDirOf,
  executeStage,
  imagesOf,
  type StageIo,
  type StageResult,
  splitNote,
} from "./lifecycle.js";
import { type ResolvedRlInputs, resolveRlInputs, rlGroups, startingFiles } from "./rl-inputs.js";
import { provenance, StoredSchema, storedConfig } from "./rl-record.js";
import {
  onlineOf,
  parseRlSettings,
  type ResolvedRlStageSettings,
  type RlInputs,
  type RlStage,
  type RlStageSettings,
  resolveSettings,
} from "./rl-settings.js";
import { startAndReference, type TrainableCount, trainableCount } from "./rl-start.js";
import { rlVlmServices } from "./rl-vlm.js";
import { RL_WIRING } from "./rl-wiring.js";

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
  trainable: TrainableCount;
}

/**
 * Runs an RL stage, or continues the run of the same stage, settings and inputs (src/store/stage-run.ts):
 * one that did not finish is continued from its last finished epoch, a done one's result is handed back.
 */
export async function runRlStage<S extends RlStage>(ws: Workspace, given: RlStageOptions<S>): Promise<RlStageResult> {
  const opts = { ...given, inputs: startingFiles(ws, given.stage, given.inputs) };
  const settings = resolveSettings<S>(opts);
  const { config } = settings;
  const inputs = resolveRlInputs(ws, opts.inputs, settings);
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
  const inputs = resolveRlInputs(ws, parsed.data.inputs, settings);
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
  const wiring = RL_WIRING[stage];
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

/** The state saved after the last finished epoch of an interrupted run, if any. */
function savedState(ws: Workspace, run: RunHandle, stage: RlStage) {
  const statePath = join(checkpointDirOf(ws, run.id, stage), STATE_FILE);
  return run.resumed && existsSync(statePath) ? loadTrainState(statePath) : undefined;
}
