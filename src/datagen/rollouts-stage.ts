/**
 * `lever rollouts` against a workspace: for each chosen query of the training split and its stored
 * pool, propose trajectories (from a selector checkpoint when given — greedy, beam, temperature
 * samples — plus similarity retrieval and uniform random ones; without a checkpoint only retrieval
 * and random), score them through the evaluation's answering path, optionally top groups up, and
 * store each query as it finishes (a killed run resumes). The rollout artefact
 * (`artifacts/rollouts/NAME.json`, format lever.rollouts/1) is assembled from the stored queries.
 *
 * Failed VLM requests are kept in the artefact as trajectories marked `evalFailed` (no accuracy, no
 * reward); the run then ends with an error naming them, and re-running the same command retries
 * exactly those queries and rewrites the artefact it wrote before.
 */

import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";
import { EMBEDDING_KINDS, type EmbeddingKind, type EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { SubsetSpecSchema } from "../data/splits.js";
import { PROMPT_ORDERS, type PromptOrder, type RolloutQuery, type RolloutSet } from "../data/trajectories.js";
import type { AnswerDeps } from "../icl/answer.js";
import { resolveCheckpoint } from "../icl/checkpoint-ref.js";
import { type OpenedSelector, openSelector, type SelectorEmbeddings } from "../icl/selector.js";
import { checkTrainedWith, trainedWith } from "../icl/trained-with.js";
import { GT_ANSWER_SETS } from "../icl/trajectory-scorer.js";
import { VQA_VARIANTS } from "../metrics/vqa.js";
import { hashFileSync } from "../store/files.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { checkWritable, rolloutArtifactPath, writeRolloutSet } from "../store/sets.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { loadQueryEmbedding } from "../task/query-embedding.js";
import { noGrad } from "../tensor/tensor.js";
import { InterruptedError, LeverError } from "../util/errors.js";
import { sha256 } from "../util/hash.js";
import { Rng } from "../util/rng.js";
import type { VlmSettings } from "../vlm/settings.js";
import { openStageInputs, poolItems, type ResolvedPools, Similarity, type StageInputs } from "./inputs.js";
import { type QueryRollouts, type RolloutSettings, rolloutQuery } from "./rollouts.js";
import { type ItemOutcome, type StageHooks, stageOutputFields } from "./stage.js";
import { type RolloutStats, rolloutStats } from "./stats.js";
import type { VlmCalls } from "./vlm-calls.js";
import { logStageMetrics, openItemRun, openVlmStage, runVlmItems, secondsSince, vlmCalls } from "./vlm-stage.js";

export const ROLLOUTS_STAGE = "rollouts";

const count = (description: string, value: number) =>
  z.number().int().nonnegative().default(value).describe(description);

export const RolloutsSettingsSchema = z
  .object({
    dataset: z.string().min(1).describe("dataset of the queries (the train split; the pools' query dataset)"),
    pools: z.string().min(1).describe("pool set under artifacts/pools/ holding each query's candidates"),
    queries: SubsetSpecSchema.default("first:100").describe(
      "queries: first:N (lowest question ids), random:N (seeded) or all, among the items with a pool",
    ),
    checkpoint: z
      .string()
      .min(1)
      .optional()
      .describe(
        "selector checkpoint proposing greedy, beam and sampled trajectories: a file or RUN[:best|last|epoch-N] (without it: retrieval and random only)",
      ),
    embedding: z
      .enum(EMBEDDING_KINDS)
      .optional()
      .describe("embedding the selector and similarity retrieval read; default: the checkpoint's, else joint"),
    shots: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("demonstrations per trajectory; default: the checkpoint's, else 2"),
    order: z
      .enum(PROMPT_ORDERS)
      .optional()
      .describe(
        "prompt order: nearest (first selected next to the query) or farthest; default: the checkpoint's (from its beams), else nearest",
      ),
    greedy: z.boolean().default(true).describe("propose the checkpoint's greedy trajectory"),
    beamWidth: count("beam-search trajectories from the checkpoint (0 = none)", 5),
    temperatures: z
      .array(z.number().positive())
      .default([1, 1.3])
      .describe("sampling temperatures for samples from the checkpoint"),
    samples: count("samples per temperature", 2),
    retrieval: count("similarity-retrieval windows: ranks r … r+S−1 for r = 0 … n−1 (0 = none)", 3),
    retrievalReversed: z.boolean().default(true).describe("also the top-S by similarity, least similar selected first"),
    random: count("uniform random trajectories (seeded per query)", 2),
    topupMin: count(
      "balanced top-up: sample more until ≥ P trajectories score above and ≥ P below the group's median (0 = off)",
      0,
    ),
    topupBudget: count("top-up: most trajectories added per query (each one generate + its scoring requests)", 16),
    topupTemperature: z.number().positive().default(1.3).describe("top-up: sampling temperature of checkpoint samples"),
    gtAnswers: z
      .enum(GT_ANSWER_SETS)
      .default("all")
      .describe(
        "answers whose probability is scored per trajectory: none (no scoring requests), majority (gtLogprob: one request), " +
          "all (also vqaGtProb: one request per distinct annotator answer, typically 1-5; a caption scores its shown reference under both)",
      ),
    correctThreshold: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe("vqaCorrect = 1 iff accuracy ≥ this; 0 means accuracy > 0 (Lever-Plus: any annotator agreed)"),
    metricVariant: z.enum(VQA_VARIANTS).default("official").describe("VQA accuracy variant (as lever eval)"),
    seed: z
      .number()
      .int()
      .min(0)
      .max(0xffffffff)
      .default(0)
      .describe("seed of --queries random:N, samples and random trajectories"),
    ...stageOutputFields("rollouts", "queries"),
  })
  .strict();
export type RolloutsSettings = z.output<typeof RolloutsSettingsSchema>;
export type RolloutsSettingsInput = z.input<typeof RolloutsSettingsSchema>;

export type RolloutsHooks = StageHooks;

export interface RolloutsResult {
  runId: string;
  resumed: boolean;
  artifact: (ArtifactRef & { name: string }) | null;
  queries: { planned: number; skipped: number; processed: number };
  stats: RolloutStats;
  vlm: VlmCalls;
  notes: string[];
  aborted: boolean;
  seconds: number;
}

export async function runRollouts(
  ws: Workspace,
  given: RolloutsSettings,
  vlmSettings: VlmSettings,
  hooks: RolloutsHooks = {},
): Promise<RolloutsResult> {
  const started = performance.now();
  // The checkpoint as a file (a training run RUN[:best|last|epoch-N] resolved to its file).
  const settings =
    given.checkpoint === undefined
      ? given
      : { ...given, checkpoint: resolveCheckpoint(ws, given.checkpoint, "--checkpoint") };
  checkWritable(ws, rolloutArtifactPath(settings.out), settings.replace); // the name and --replace, before any work
  const inputs = openStageInputs(ws, settings, settings.queries, "--queries");
  const notes: string[] = [];
  const matrices = embeddingPairs(ws, settings.dataset, inputs.index.name);
  const selector = openCheckpoint(settings, inputs.pools.set.sampler, matrices, notes, () => ({
    dataset: inputs.index.name,
    items: [...inputs.indexById.values()],
  }));
  const embedding = settings.embedding ?? selector?.embedding ?? "joint";
  const { query: queryMatrix, index: indexMatrix } = matrices(embedding);
  const similarity = new Similarity(queryMatrix, indexMatrix);
  const rollout = rolloutSettings(settings, selector, inputs.pools.set.k);
  const stage = openVlmStage(ws, vlmSettings, inputs.dataset, settings.seed, hooks);
  const generator = generatorRecord(ws, settings, inputs, embedding, rollout, stage.vlm.backend.id);
  const config = runConfig(ws, settings, inputs, embedding, generator);
  const run = openItemRun(stage, ROLLOUTS_STAGE, config, settings.seed);
  const earlier = new Set((ws.getStage(run.runId, run.stage)?.artifacts ?? []).map((a) => a.sha256));
  const context: QueryContext = {
    ...inputs,
    selector,
    similarity,
    root: new Rng(settings.seed).child("rollouts"),
    rollout,
    deps: {
      vlm: stage.vlm.vlm,
      ...inputs.task.answering({ references: [...inputs.indexById.values()], variant: settings.metricVariant }),
      signal: hooks.signal,
    },
  };
  const items = await runVlmItems<QueryRollouts>(stage, run, {
    items: inputs.items,
    concurrency: settings.concurrency,
    scoring: settings.gtAnswers !== "none",
    redo: (value) => value.failed > 0,
    work: (query) => rolloutOne(context, query),
  });

  const { groups, topups } = rolloutGroups(inputs, items.done);
  const stats = rolloutStats(Object.values(groups), topups);
  const result: RolloutsResult = {
    runId: run.runId,
    resumed: run.opened !== "new",
    artifact: null,
    queries: { planned: inputs.items.length, skipped: items.skipped, processed: items.processed },
    stats,
    vlm: vlmCalls(stage),
    notes,
    aborted: items.aborted,
    seconds: 0,
  };
  logStageMetrics(stage, run, rolloutMetrics(stats), result.vlm);
  if (!items.aborted) {
    const set: RolloutSet = {
      format: "lever.rollouts/1",
      dataset: settings.dataset,
      promptOrder: rollout.scoring.order,
      queries: groups,
      meta: { generator, stats },
    };
    const ref = writeRollouts(ws, settings, set, earlier);
    run.complete([ref], stats.failed.trajectories > 0 ? failedMessage(stats) : undefined);
    result.artifact = { ...ref, name: settings.out };
  }
  result.seconds = secondsSince(started);
  return result;
}

type EmbeddingPair = { query: EmbeddingMatrix; index: EmbeddingMatrix };

/** The query and index datasets' embedding matrices of a kind, each kind loaded once. */
function embeddingPairs(
  ws: Workspace,
  queryDataset: string,
  indexDataset: string,
): (kind: EmbeddingKind) => EmbeddingPair {
  const cache = new Map<EmbeddingKind, EmbeddingPair>();
  return (kind) => {
    let pair = cache.get(kind);
    if (pair === undefined) {
      pair = {
        query: loadQueryEmbedding(ws, queryDataset, kind),
        index: loadDatasetEmbedding(ws, indexDataset, kind),
      };
      cache.set(kind, pair);
    }
    return pair;
  };
}

/** The --checkpoint selector (reading the embedding it names), or undefined without one; says which in `notes`. */
function openCheckpoint(
  settings: Pick<RolloutsSettings, "checkpoint" | "embedding" | "pools">,
  poolSampler: string,
  matrices: (kind: EmbeddingKind) => EmbeddingPair,
  notes: string[],
  indexItems: SelectorEmbeddings["indexItems"],
): OpenedSelector | undefined {
  if (settings.checkpoint === undefined) {
    notes.push("no --checkpoint: proposing similarity retrieval and random trajectories only");
    return undefined;
  }
  const selector = openSelector(
    settings.checkpoint,
    { embedding: settings.embedding, from: { embedding: "--embedding" } },
    { query: (kind) => matrices(kind).query, index: (kind) => matrices(kind).index, indexItems },
  );
  // The pool set read must be drawn as the selector's training pools were.
  const trained = trainedWith(selector.checkpoint.provenance, settings.checkpoint);
  checkTrainedWith(trained, settings.checkpoint, {
    poolSampler: { value: poolSampler, from: `--pools ${settings.pools}` },
  });
  notes.push(`${selector.label}: embedding ${selector.embedding} (${selector.sources.embedding})`);
  return selector;
}

/**
 * What is proposed, scored and topped up per query: the prompt order and shots from the flags, else
 * the checkpoint's, else nearest and 2; the checkpoint's own proposers only with a checkpoint.
 */
function rolloutSettings(settings: RolloutsSettings, selector: OpenedSelector | undefined, K: number): RolloutSettings {
  const storedOrder = selector?.checkpoint.provenance.notes.promptOrder;
  if (storedOrder !== undefined && !(PROMPT_ORDERS as readonly string[]).includes(storedOrder))
    throw new LeverError(`unknown prompt order "${storedOrder}"`, {
      file: settings.checkpoint,
      field: "provenance.notes.promptOrder",
    });
  const order: PromptOrder = settings.order ?? (storedOrder as PromptOrder | undefined) ?? "nearest";
  const shots = settings.shots ?? selector?.checkpoint.shots ?? 2;
  if (shots > K) throw new LeverError(`${shots} shots cannot be chosen from pools of K = ${K}`, { field: "--shots" });
  const fromCheckpoint = selector !== undefined;
  return {
    proposals: {
      shots,
      greedy: fromCheckpoint && settings.greedy,
      beamWidth: fromCheckpoint ? settings.beamWidth : 0,
      temperatures: fromCheckpoint ? settings.temperatures : [],
      samples: fromCheckpoint ? settings.samples : 0,
      retrieval: settings.retrieval,
      retrievalReversed: settings.retrievalReversed,
      random: settings.random,
    },
    scoring: { gtAnswers: settings.gtAnswers, correctThreshold: settings.correctThreshold, order },
    topup: { min: settings.topupMin, budget: settings.topupBudget, temperature: settings.topupTemperature },
  };
}

/**
 * How the rollouts were made, as the artefact records it (`meta.generator`); the checkpoint by file
 * (workspace-relative inside the workspace, so a moved workspace assembles the same bytes) and sha256.
 */
function generatorRecord(
  ws: Workspace,
  settings: RolloutsSettings,
  { pools: { ref: pools }, task }: Pick<StageInputs, "pools" | "task">,
  embedding: EmbeddingKind,
  rollout: RolloutSettings,
  vlm: string,
) {
  const checkpoint =
    settings.checkpoint !== undefined
      ? { file: ws.storedPath(settings.checkpoint), sha256: hashFileSync(settings.checkpoint).sha256 }
      : null;
  return {
    method: "lever rollouts",
    queries: settings.queries,
    seed: settings.seed,
    pools,
    checkpoint,
    embedding,
    order: rollout.scoring.order,
    proposals: rollout.proposals,
    topup: rollout.topup,
    scoring: {
      gtAnswers: settings.gtAnswers,
      correctThreshold: settings.correctThreshold,
      metric: task.rewardMetric(settings.metricVariant),
    },
    vlm,
  };
}

/**
 * The run's config: its hash identifies the run, so re-running the same command resumes it. The
 * checkpoint enters by content only (not by path).
 */
function runConfig(
  ws: Workspace,
  settings: RolloutsSettings,
  inputs: StageInputs,
  embedding: EmbeddingKind,
  generator: ReturnType<typeof generatorRecord>,
): Record<string, unknown> {
  return {
    format: "lever.rollouts-run/1",
    dataset: { name: inputs.dataset.name, items: inputs.dataset.itemsHash },
    index: { name: inputs.index.name, items: inputs.index.itemsHash },
    embeddings: Object.fromEntries(
      [...new Set([settings.dataset, inputs.index.name])].map((name) => [
        `${name}/${embedding}`,
        ws.getEmbedding(name, embedding)!.sha256,
      ]),
    ),
    generator: { ...generator, checkpoint: generator.checkpoint?.sha256 ?? null },
  };
}

/** What rolling out one query reads. */
interface QueryContext {
  pools: ResolvedPools;
  indexById: ReadonlyMap<string, VqaItem>;
  selector: OpenedSelector | undefined;
  similarity: Similarity;
  /** The stage's random stream; each query draws from its own child. */
  root: Rng;
  rollout: RolloutSettings;
  deps: AnswerDeps;
}

/** Proposes and scores one query's trajectories (the checkpoint encodes its pool once). */
async function rolloutOne(context: QueryContext, query: VqaItem): Promise<ItemOutcome<QueryRollouts>> {
  const { selector, deps } = context;
  const key = query.questionId;
  const ids = context.pools.set.pools[key];
  const policy =
    selector !== undefined
      ? { model: selector.model, enc: noGrad(() => selector.model.encode(selector.input([query], [ids]))) }
      : undefined;
  const value = await rolloutQuery(
    {
      query,
      pool: poolItems(ids, context.indexById, key),
      similarity: context.similarity.toCandidates(key, ids),
      rng: context.root.child(key),
      policy,
    },
    context.rollout,
    context.indexById,
    deps,
  );
  // A query cut short by the signal holds "aborted" failures that say nothing about the VLM.
  if (deps.signal?.aborted && value.failed > 0) return { ok: false, error: "aborted" };
  return { ok: true, value };
}

/** The artefact's groups of the stored queries, in question-id order, and their top-up records. */
function rolloutGroups(
  inputs: StageInputs,
  done: ReadonlyMap<string, QueryRollouts>,
): { groups: Record<string, RolloutQuery>; topups: QueryRollouts["topup"][] } {
  const groups: Record<string, RolloutQuery> = {};
  const topups: QueryRollouts["topup"][] = [];
  for (const query of inputs.items) {
    const stored = done.get(query.questionId);
    if (stored === undefined) continue;
    topups.push(stored.topup);
    groups[query.questionId] = {
      pool: inputs.pools.set.pools[query.questionId],
      trajectories: stored.trajectories,
      info: {
        question_id: query.questionId,
        question: query.question,
        multiple_choice_answer: query.answer,
        gt_answers_raw: query.answers.map((a) => a.answer),
      },
      extra: { lever_pool: inputs.pools.ref, ...(stored.topup !== null ? { lever_topup: stored.topup } : {}) },
    };
  }
  return { groups, topups };
}

function rolloutMetrics(stats: RolloutStats): [string, number][] {
  return [
    ["queries", stats.queries],
    ["trajectories", stats.trajectories],
    ["trajectories_per_query.min", stats.perQuery.min],
    ["trajectories_per_query.mean", stats.perQuery.mean],
    ["trajectories_per_query.max", stats.perQuery.max],
    ["all_equal_share", stats.allEqualShare],
    ["positive_fraction", stats.positiveFraction],
    ["failed_trajectories", stats.failed.trajectories],
    ...Object.entries(stats.accuracyHistogram).map(([acc, n]): [string, number] => [`accuracy_histogram.${acc}`, n]),
    ...(stats.topup !== null ? [["topup.balanced", stats.topup.balanced] as [string, number]] : []),
  ];
}

/**
 * Writes the artefact. An artefact this run wrote before is replaced without --replace: a rerun
 * retrying failed queries rewrites its own output.
 */
function writeRollouts(ws: Workspace, settings: RolloutsSettings, set: RolloutSet, earlier: ReadonlySet<string>) {
  const path = ws.artifactPath(rolloutArtifactPath(settings.out));
  const ownEarlier = existsSync(path) && earlier.has(sha256(readFileSync(path)));
  return writeRolloutSet(ws, settings.out, set, { replace: settings.replace || ownEarlier });
}

function failedMessage(stats: RolloutStats): string {
  return `${stats.failed.trajectories} trajectories of ${stats.failed.queries} queries failed`;
}

/**
 * The error a run stopped by Ctrl-C (`result.aborted`) ends with: what it kept; `hint` (how to resume,
 * in the caller's words) is appended when given.
 */
export function rolloutsInterrupted(
  result: Pick<RolloutsResult, "queries" | "runId">,
  hint?: string,
): InterruptedError {
  const { skipped, processed, planned } = result.queries;
  return new InterruptedError(
    `rollouts run ${result.runId} stopped after ${skipped + processed} of ${planned} queries (those are stored)` +
      (hint === undefined ? "" : `; ${hint}`),
  );
}

/** The one-line error a run with failed trajectories ends with (after writing the artefact). */
export function failedTrajectoriesError(result: RolloutsResult): LeverError {
  return new LeverError(
    `${failedMessage(result.stats)} (marked evalFailed in artifacts/${result.artifact?.path}, excluded from rewards); ` +
      "rerun the same command to retry them",
    { record: result.runId },
  );
}
