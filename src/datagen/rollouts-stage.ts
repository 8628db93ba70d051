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
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import { SubsetSpecSchema } from "../data/splits.js";
import { PROMPT_ORDERS, type PromptOrder, type RolloutQuery, type RolloutSet } from "../data/trajectories.js";
import { vqaAnswering } from "../icl/answer.js";
import { createVlm } from "../icl/backend.js";
import { GT_ANSWER_SETS } from "../icl/score.js";
import { type OpenedSelector, openSelector } from "../icl/selector.js";
import { VQA_VARIANTS } from "../metrics/vqa.js";
import { hashFileSync } from "../store/files.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { rolloutArtifactPath, writeRolloutSet } from "../store/sets.js";
import { openStageRun } from "../store/stage-run.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { noGrad } from "../tensor/tensor.js";
import { LeverError } from "../util/errors.js";
import { sha256 } from "../util/hash.js";
import { Rng } from "../util/rng.js";
import type { VlmSettings } from "../vlm/settings.js";
import { preflight } from "../vlm/types.js";
import { openStageInputs, poolItems, Similarity } from "./inputs.js";
import type { ProposalSettings } from "./proposals.js";
import { type QueryRollouts, type RolloutSettings, rolloutQuery } from "./rollouts.js";
import { runItems, type StageHooks, stageOutputFields } from "./stage.js";
import { type RolloutStats, rolloutStats } from "./stats.js";
import { callCounter, type VlmCalls } from "./vlm-calls.js";

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
        "selector checkpoint proposing greedy, beam and sampled trajectories (without it: retrieval and random only)",
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
          "all (also vqaGtProb: one request per distinct annotator answer, typically 1-5)",
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
  settings: RolloutsSettings,
  vlmSettings: VlmSettings,
  hooks: RolloutsHooks = {},
): Promise<RolloutsResult> {
  const started = performance.now();
  rolloutArtifactPath(settings.out);
  const {
    dataset,
    pools,
    index: indexRecord,
    items: queries,
    indexById,
  } = openStageInputs(ws, settings, settings.queries, "--queries");
  const notes: string[] = [];

  const matrices = (kind: EmbeddingKind) => ({
    query: loadDatasetEmbedding(ws, settings.dataset, kind),
    index: loadDatasetEmbedding(ws, indexRecord.name, kind),
  });
  let selector: OpenedSelector | undefined;
  if (settings.checkpoint !== undefined) {
    const cache = new Map<EmbeddingKind, ReturnType<typeof matrices>>();
    const get = (kind: EmbeddingKind) => {
      let m = cache.get(kind);
      if (!m) cache.set(kind, (m = matrices(kind)));
      return m;
    };
    selector = openSelector(
      settings.checkpoint,
      { embedding: settings.embedding },
      { query: (kind) => get(kind).query, index: (kind) => get(kind).index },
    );
    notes.push(`${selector.label}: embedding ${selector.embedding} (${selector.sources.embedding})`);
  } else notes.push("no --checkpoint: proposing similarity retrieval and random trajectories only");
  const embedding = settings.embedding ?? selector?.embedding ?? "joint";
  const { query: queryMatrix, index: indexMatrix } = matrices(embedding);
  const similarity = new Similarity(queryMatrix, indexMatrix);
  const storedOrder = selector?.checkpoint.provenance.notes.promptOrder;
  if (storedOrder !== undefined && !(PROMPT_ORDERS as readonly string[]).includes(storedOrder))
    throw new LeverError(`unknown prompt order "${storedOrder}"`, {
      file: settings.checkpoint,
      field: "provenance.notes.promptOrder",
    });
  const order: PromptOrder = settings.order ?? (storedOrder as PromptOrder | undefined) ?? "nearest";
  const shots = settings.shots ?? selector?.checkpoint.shots ?? 2;
  if (shots > pools.set.k)
    throw new LeverError(`${shots} shots cannot be chosen from pools of K = ${pools.set.k}`, { field: "--shots" });
  const proposals: ProposalSettings = {
    shots,
    greedy: selector !== undefined && settings.greedy,
    beamWidth: selector !== undefined ? settings.beamWidth : 0,
    temperatures: selector !== undefined ? settings.temperatures : [],
    samples: selector !== undefined ? settings.samples : 0,
    retrieval: settings.retrieval,
    retrievalReversed: settings.retrievalReversed,
    random: settings.random,
  };
  const rollout: RolloutSettings = {
    proposals,
    scoring: { gtAnswers: settings.gtAnswers, correctThreshold: settings.correctThreshold, order },
    topup: { min: settings.topupMin, budget: settings.topupBudget, temperature: settings.topupTemperature },
  };

  const counter = callCounter();
  const vlm = createVlm(ws, vlmSettings, dataset, {
    seed: settings.seed,
    wrapBackend: (backend) => counter.wrap(hooks.wrapBackend ? hooks.wrapBackend(backend) : backend),
  });

  const checkpoint =
    settings.checkpoint !== undefined
      ? { file: settings.checkpoint, sha256: hashFileSync(settings.checkpoint).sha256 }
      : null;
  const generator = {
    method: "lever rollouts",
    queries: settings.queries,
    seed: settings.seed,
    pools: pools.ref,
    checkpoint,
    embedding,
    order,
    proposals,
    topup: rollout.topup,
    scoring: {
      gtAnswers: settings.gtAnswers,
      correctThreshold: settings.correctThreshold,
      metric: settings.metricVariant,
    },
    vlm: vlm.backend.id,
  };
  const config = {
    format: "lever.rollouts-run/1",
    dataset: { name: dataset.name, items: dataset.itemsHash },
    index: { name: indexRecord.name, items: indexRecord.itemsHash },
    embeddings: Object.fromEntries(
      [...new Set([settings.dataset, indexRecord.name])].map((name) => [
        `${name}/${embedding}`,
        ws.getEmbedding(name, embedding)!.sha256,
      ]),
    ),
    generator: { ...generator, checkpoint: checkpoint?.sha256 ?? null },
  };
  const run = openStageRun(ws, { kind: ROLLOUTS_STAGE, config, seed: settings.seed, work: "items", note: hooks.note });
  const { runId } = run;
  const earlier = new Set((ws.getStage(runId, ROLLOUTS_STAGE)?.artifacts ?? []).map((a) => a.sha256));
  run.begin();
  const queryById = new Map(queries.map((q) => [q.questionId, q]));
  const answering = vqaAnswering(settings.metricVariant);
  const signal = hooks.signal;
  const root = new Rng(settings.seed).child("rollouts");
  const items = await runItems<QueryRollouts>({
    ws,
    run,
    keys: queries.map((q) => q.questionId),
    concurrency: settings.concurrency,
    signal,
    progress: hooks.progress,
    activity: () => counter.activity(),
    redo: (value) => value.failed > 0,
    beforeWork: () => preflight(vlm.vlm, { scoring: settings.gtAnswers !== "none", signal }),
    work: async (key) => {
      const query = queryById.get(key)!;
      const ids = pools.set.pools[key];
      const policy =
        selector !== undefined
          ? { model: selector.model, enc: noGrad(() => selector.model.encode(selector.input([query], [ids]))) }
          : undefined;
      const value = await rolloutQuery(
        {
          query,
          pool: poolItems(ids, indexById, key),
          similarity: similarity.toCandidates(key, ids),
          rng: root.child(key),
          policy,
        },
        rollout,
        indexById,
        { vlm: vlm.vlm, ...answering, signal },
      );
      // A query cut short by the signal holds "aborted" failures that say nothing about the VLM.
      if (signal?.aborted && value.failed > 0) return { ok: false, error: "aborted" };
      return { ok: true, value };
    },
  });

  const groups: Record<string, RolloutQuery> = {};
  const topups: QueryRollouts["topup"][] = [];
  for (const query of queries) {
    const stored = items.done.get(query.questionId);
    if (stored === undefined) continue;
    topups.push(stored.topup);
    groups[query.questionId] = {
      pool: pools.set.pools[query.questionId],
      trajectories: stored.trajectories,
      info: {
        question_id: query.questionId,
        question: query.question,
        multiple_choice_answer: query.answer,
        gt_answers_raw: query.answers.map((a) => a.answer),
      },
      extra: { lever_pool: pools.ref, ...(stored.topup !== null ? { lever_topup: stored.topup } : {}) },
    };
  }
  const stats = rolloutStats(Object.values(groups), topups);
  const vlmCalls = counter.summary(vlm.vlm);
  const result: RolloutsResult = {
    runId,
    resumed: run.opened !== "new",
    artifact: null,
    queries: { planned: queries.length, skipped: items.skipped, processed: items.processed },
    stats,
    vlm: vlmCalls,
    notes,
    aborted: items.aborted,
    seconds: 0,
  };
  const metric = (name: string, value: number) => ({ runId, stage: ROLLOUTS_STAGE, name, value });
  ws.logMetrics([
    metric("queries", stats.queries),
    metric("trajectories", stats.trajectories),
    metric("trajectories_per_query.min", stats.perQuery.min),
    metric("trajectories_per_query.mean", stats.perQuery.mean),
    metric("trajectories_per_query.max", stats.perQuery.max),
    metric("all_equal_share", stats.allEqualShare),
    metric("positive_fraction", stats.positiveFraction),
    metric("failed_trajectories", stats.failed.trajectories),
    ...Object.entries(stats.accuracyHistogram).map(([acc, n]) => metric(`accuracy_histogram.${acc}`, n)),
    ...(stats.topup !== null ? [metric("topup.balanced", stats.topup.balanced)] : []),
    metric("vlm.calls", vlmCalls.calls),
    metric("vlm.cache_hits", vlmCalls.cacheHits),
    metric("vlm.failures", vlmCalls.failures),
  ]);
  if (items.aborted) {
    result.seconds = (performance.now() - started) / 1000;
    return result;
  }
  const set: RolloutSet = {
    format: "lever.rollouts/1",
    dataset: settings.dataset,
    promptOrder: order,
    queries: groups,
    meta: { generator, stats },
  };
  const path = ws.artifactPath(rolloutArtifactPath(settings.out));
  const ownEarlier = existsSync(path) && earlier.has(sha256(readFileSync(path)));
  const ref = writeRolloutSet(ws, settings.out, set, { replace: settings.replace || ownEarlier });
  run.complete([ref], stats.failed.trajectories > 0 ? failedMessage(stats) : undefined);
  result.artifact = { ...ref, name: settings.out };
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

function failedMessage(stats: RolloutStats): string {
  return `${stats.failed.trajectories} trajectories of ${stats.failed.queries} queries failed`;
}

/** The one-line error a run with failed trajectories ends with (after writing the artefact). */
export function failedTrajectoriesError(result: RolloutsResult): LeverError {
  return new LeverError(
    `${failedMessage(result.stats)} (marked evalFailed in artifacts/${result.artifact?.path}, excluded from rewards); ` +
      "rerun the same command to retry them",
    { record: result.runId },
  );
}
