/**
 * The stages of `lever run`, one entry each: the upstream stages it reads, the other experiment
 * sections that reach it, and how it runs (→ its typed outputs). Everything else derives from this
 * table: the plan with every stage's identity and label (src/experiment/plan.ts), the dry-run, the
 * stage records and the execution (src/experiment/execute.ts). A stage's section in the experiment
 * file has the stage's name (src/experiment/schema.ts); a stage whose section is absent is not run.
 *
 * Stage graph (what each stage reads; every stage after data also reads data, after pools the pools):
 *   data → pools → beams → sft → rollouts → rce → grpo
 *                                            └──→ online (from rce)
 * The evaluation (src/experiment/evaluate.ts) reads data, the pools' sampler and K and every trained
 * checkpoint of the variants.
 */
import { beamsInterrupted, runBeams } from "../datagen/beams-stage.js";
import { failedTrajectoriesError, rolloutsInterrupted, runRollouts } from "../datagen/rollouts-stage.js";
import { makePools } from "../pools/stage.js";
import { beamArtifactPath, poolArtifactPath, rolloutArtifactPath } from "../store/sets.js";
import type { Workspace } from "../store/workspace.js";
import { queryKindOf } from "../task/query-embedding.js";
import { resolveModeDefaults } from "../train/objective/grpo-settings.js";
import { RANDOM_INIT, type ResolvedGrpoStageConfig, type RlStageSettings } from "../train/stage/rl-settings.js";
import { runRlStage } from "../train/stage/rl-stage.js";
import { runSftStage } from "../train/stage/sft-stage.js";
import { InterruptedError, LeverError } from "../util/errors.js";
import type { ProgressStream } from "../util/progress.js";
import type { VlmSettings } from "../vlm/settings.js";
import { type DataOutputs, runData } from "./data-stage.js";
import { type Experiment, onlineGrpoConfig } from "./schema.js";

export type { DataOutputs } from "./data-stage.js";
export interface PoolsOutputs {
  name: string;
  train: string;
}
/** A data-generation stage: the artefact it wrote and its run. */
export interface ArtefactOutputs {
  name: string;
  runId: string;
}
/** A training stage: its run and the checkpoint the chain goes on with (the best, else the last). */
export interface TrainedOutputs {
  runId: string;
  bestFile: string;
}

/** What each stage records when done (its stage record's `outputs`; keys ending in `File` are files that must still exist). */
export interface StageOutputs {
  data: DataOutputs;
  pools: PoolsOutputs;
  beams: ArtefactOutputs;
  sft: TrainedOutputs;
  rollouts: ArtefactOutputs;
  rce: TrainedOutputs;
  grpo: TrainedOutputs;
  online: TrainedOutputs;
}
export type StageName = keyof StageOutputs;
export type AnyStageOutputs = StageOutputs[StageName];
/** The outputs of a plan's stages, by `<stage>-<id>`. */
export type StageOutputMap = Map<string, AnyStageOutputs>;
type Section<S extends StageName> = NonNullable<Experiment[S]>;
/** The sections with settings that depend on others, resolved (GRPO's mode defaults: rl-settings.ts). */
interface ResolvedSections {
  grpo: ResolvedGrpoStageConfig;
  online: ResolvedGrpoStageConfig;
}
/** A stage's section as its identity hashes it: resolved where it has dependent defaults, else as given. */
export type ResolvedSection<S extends StageName> = S extends keyof ResolvedSections ? ResolvedSections[S] : Section<S>;

/** What a stage's `run` gets. */
export interface StageContext<S extends StageName> {
  ws: Workspace;
  experiment: Experiment;
  /** The stage's own section. */
  settings: Section<S>;
  /** `x<id>`: names the stage's artefacts, datasets and runs. */
  tag: string;
  /** The outputs of one of its inputs; throws for a stage that is not one. */
  input<I extends StageName>(stage: I): StageOutputs[I];
  /** The outputs of an input the plan may leave out (`uses`, `startsFrom`), or undefined. */
  optional<I extends StageName>(stage: I): StageOutputs[I] | undefined;
  progress: ProgressStream | null;
  note: (text: string) => void;
  signal?: AbortSignal;
}

export interface StageEntry<S extends StageName> {
  /** Upstream stages it always reads: an experiment without one of their sections is refused (saying `why`). */
  needs: readonly StageName[];
  why?: string;
  /** Upstream stages it reads when the experiment has them. */
  uses?: readonly StageName[];
  /**
   * It trains a selector: its outputs are `TrainedOutputs`, whose checkpoint the evaluation compares as
   * `selector:<label>`, the comparison may take as its baseline, and the guard validates when it is the last.
   */
  trains?: true;
  /** Where a training stage starts: the first of these the experiment has (none: from scratch). */
  startsFrom?: readonly StageName[];
  /** Other sections whose settings enter its identity (operational ones excepted) and whose swept values name it. */
  reads: readonly ("vlm" | "embedding")[];
  /** For a stage that asks the VLM only with some settings: whether it does (its identity holds the VLM only then). */
  asksVlm?(settings: Section<S>): boolean;
  /** The section with the defaults that depend on its other settings filled (what enters its identity). */
  filled?(settings: Section<S>): ResolvedSection<S>;
  run(ctx: StageContext<S>): Promise<StageOutputs[S]> | StageOutputs[S];
  /** The named artefacts (under artifacts/) it hands on besides its `…File` outputs: reuse needs them unchanged. */
  handsOn?(outputs: StageOutputs[S]): string[];
}

/** Training stages start from RCE when there is one, else from SFT. */
const START = ["rce", "sft"] as const;

/** The table, in execution order. */
export const STAGE_TABLE: { readonly [S in StageName]: StageEntry<S> } = {
  data: { needs: [], reads: [], run: (c) => runData(c.ws, c.experiment, c.tag) },
  pools: { needs: ["data"], reads: [], run: runPoolsStage, handsOn: (o) => [poolArtifactPath(o.name)] },
  beams: {
    needs: ["data", "pools"],
    reads: ["vlm", "embedding"],
    run: runBeamsStage,
    handsOn: (o) => [beamArtifactPath(o.name)],
  },
  sft: {
    needs: ["data", "pools", "beams"],
    why: "SFT trains on beams",
    reads: ["embedding"],
    trains: true,
    run: runSft,
  },
  rollouts: {
    needs: ["data", "pools"],
    uses: ["sft"],
    reads: ["vlm", "embedding"],
    run: runRolloutsStage,
    handsOn: (o) => [rolloutArtifactPath(o.name)],
  },
  rce: {
    needs: ["data", "pools", "rollouts"],
    uses: ["sft"],
    reads: ["vlm", "embedding"],
    trains: true,
    asksVlm: (s) => s.validation.answers,
    run: (c) => runRl(c, "rce", { stage: "rce", config: c.settings }),
  },
  grpo: {
    needs: ["data", "pools", "rollouts"],
    why: "online GRPO is the online section",
    startsFrom: START,
    reads: ["vlm", "embedding"],
    trains: true,
    asksVlm: (s) => s.validation.answers,
    filled: (s) => resolveModeDefaults(s),
    run: (c) => runRl(c, "grpo", { stage: "grpo", config: c.settings }),
  },
  online: {
    needs: ["data", "pools"],
    startsFrom: START,
    reads: ["vlm", "embedding"],
    trains: true,
    filled: (s) => resolveModeDefaults(s, "online"),
    run: (c) => runRl(c, "online", { stage: "grpo", config: onlineGrpoConfig(c.settings) }),
  },
};

export const STAGES = Object.keys(STAGE_TABLE) as StageName[];

/** The stages that train a selector (`trains` in the table), in table order. */
export const TRAINING_STAGES: readonly StageName[] = STAGES.filter(
  (stage) => (STAGE_TABLE[stage] as StageEntry<StageName>).trains === true,
);

/** A training stage's outputs (its checkpoint), or undefined for any other stage or one that did not run. */
export function trainedOutputs(stage: StageName, outputs: StageOutputMap, id: string): TrainedOutputs | undefined {
  return TRAINING_STAGES.includes(stage) ? (outputs.get(`${stage}-${id}`) as TrainedOutputs | undefined) : undefined;
}

function runPoolsStage(c: StageContext<"pools">): PoolsOutputs {
  const { train } = c.input("data");
  const summary = makePools(
    c.ws,
    { ...c.settings, queries: train, index: train, out: c.tag, replace: false },
    queryKindOf(c.ws.requireDataset(train)),
  );
  return { name: summary.name, train };
}

async function runBeamsStage(c: StageContext<"beams">): Promise<ArtefactOutputs> {
  const data = c.input("data");
  const result = await runBeams(
    c.ws,
    { ...c.settings, dataset: data.train, pools: c.input("pools").name, out: c.tag, replace: false },
    withWorld(c.experiment.vlm, data),
    { progress: c.progress, note: c.note, signal: c.signal },
  );
  if (result.aborted) throw beamsInterrupted(result);
  if (result.artifact === null)
    throw new LeverError(`beam search stopped with ${result.failures.length} failed anchors; rerun to retry them`);
  return { name: result.artifact.name, runId: result.runId };
}

async function runSft(c: StageContext<"sft">): Promise<TrainedOutputs> {
  const result = await runSftStage(c.ws, {
    beams: c.input("beams").name,
    pools: c.input("pools").name,
    dataset: c.input("data").train,
    embedding: c.experiment.embedding,
    name: c.tag,
    config: c.settings,
    progress: c.progress,
    note: c.note,
    signal: c.signal,
  });
  return trained(result.runId, result.bestCheckpoint, result.checkpoints);
}

async function runRolloutsStage(c: StageContext<"rollouts">): Promise<ArtefactOutputs> {
  const data = c.input("data");
  const init = c.optional("sft")?.bestFile;
  const result = await runRollouts(
    c.ws,
    {
      ...c.settings,
      dataset: data.train,
      pools: c.input("pools").name,
      ...(init !== undefined ? { checkpoint: init } : {}),
      embedding: c.experiment.embedding,
      out: c.tag,
      replace: false,
    },
    withWorld(c.experiment.vlm, data),
    { progress: c.progress, note: c.note, signal: c.signal },
  );
  if (result.aborted) throw rolloutsInterrupted(result);
  if (result.artifact === null) throw new LeverError("rollouts stopped before every query was scored; rerun to resume");
  // As `lever rollouts`: the stage is not done while trajectories failed, so the rerun retries them.
  if (result.stats.failed.trajectories > 0) throw failedTrajectoriesError(result);
  return { name: result.artifact.name, runId: result.runId };
}

/** RCE, offline GRPO (on the rollouts) or online GRPO, from the checkpoint it starts from. */
async function runRl(
  c: StageContext<"rce" | "grpo" | "online">,
  stage: "rce" | "grpo" | "online",
  settings: RlStageSettings,
): Promise<TrainedOutputs> {
  const data = c.input("data");
  const init = (c.optional("rce") ?? c.optional("sft"))?.bestFile;
  if (init === undefined)
    c.note(`${stage} starts from a seeded random init (the experiment has no sft or rce section)`);
  const result = await runRlStage(c.ws, {
    ...settings,
    inputs: {
      ...(stage !== "online" ? { rollouts: c.input("rollouts").name } : {}),
      pools: c.input("pools").name,
      dataset: data.train,
      embedding: c.experiment.embedding,
      init: init ?? RANDOM_INIT,
      name: c.tag,
    },
    vlm: withWorld(c.experiment.vlm, data),
    progress: c.progress,
    note: c.note,
    signal: c.signal,
  });
  return trained(result.runId, result.bestCheckpoint, result.checkpoints);
}

function trained(runId: string, best: string | null, checkpoints: readonly string[]): TrainedOutputs {
  const bestFile = best ?? checkpoints.at(-1);
  if (bestFile === undefined) throw new LeverError(`run ${runId} wrote no checkpoint`);
  return { runId, bestFile };
}

/** The simulator answers from the data stage's synthetic world unless the experiment names one. */
export function withWorld(vlm: VlmSettings, data: DataOutputs): VlmSettings {
  return data.world !== undefined && vlm.vlm === "sim" && vlm.world === undefined ? { ...vlm, world: data.world } : vlm;
}

/** After Ctrl-C: the stage at work stores what it finished and stops (training: after the batch in flight); nothing further starts. */
export function interruptedError(): InterruptedError {
  return new InterruptedError("stopped before the next stage");
}
