/**
 * `lever beams` against a workspace: anchors of the training split with their stored pools, the
 * InfoScore beam search of every anchor through the configured VLM (several anchors in flight),
 * each anchor stored as it finishes (a killed run resumes), and the beam artefact
 * (`artifacts/beams/NAME.json`, format lever.beams/1) assembled from the stored anchors in
 * question-id order — what `lever train sft --beams NAME` reads. A failed VLM request fails its
 * anchor: it is recorded, retried by the next run, and no artefact is written until every anchor
 * succeeded (an artefact never silently lacks anchors).
 */

import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { SubsetSpecSchema } from "../data/splits.js";
import type { BeamQuery, BeamSearchRecord, BeamSet, PoolRef } from "../data/trajectories.js";
import { PROMPT_ORDERS } from "../data/trajectories.js";
import { mean } from "../metrics/stats.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { beamArtifactPath, checkWritable, writeBeamSet } from "../store/sets.js";
import type { StageRun } from "../store/stage-run.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { loadQueryEmbedding } from "../task/query-embedding.js";
import { InterruptedError, LeverError } from "../util/errors.js";
import { maxOf, minOf } from "../util/extent.js";
import type { VlmSettings } from "../vlm/settings.js";
import type { Vlm } from "../vlm/types.js";
import { type BeamSearchSettings, checkSearchSettings, searchAnchor } from "./beams.js";
import { openStageInputs, poolItems, type ResolvedPools, Similarity, type StageInputs } from "./inputs.js";
import { type ItemOutcome, type ItemStageResult, type StageHooks, stageOutputFields } from "./stage.js";
import type { VlmCalls } from "./vlm-calls.js";
import { logStageMetrics, openItemRun, openVlmStage, runVlmItems, secondsSince, vlmCalls } from "./vlm-stage.js";

export const BEAMS_STAGE = "beams";

export const BeamsSettingsSchema = z
  .object({
    dataset: z.string().min(1).describe("dataset of the anchors (the train split; the pools' query dataset)"),
    pools: z
      .string()
      .min(1)
      .describe("pool set under artifacts/pools/ holding each anchor's candidates (made by lever pools)"),
    anchors: SubsetSpecSchema.default("first:100").describe(
      "anchors: first:N (lowest question ids), random:N (seeded) or all, among the items with a pool",
    ),
    shots: z.number().int().positive().default(2).describe("demonstrations per sequence (search depth)"),
    beamSize: z.number().int().positive().default(5).describe("sequences kept after every step"),
    budget: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "candidates scored per beam and step: the M most similar to the anchor (see --prior-embedding); default: all K (exhaustive)",
      ),
    priorEmbedding: z
      .enum(EMBEDDING_KINDS)
      .default("joint")
      .describe("embedding whose cosine similarity to the anchor ranks candidates for --budget"),
    order: z
      .enum(PROMPT_ORDERS)
      .default("nearest")
      .describe(
        "where each new demonstration goes: nearest (first selected next to the query, later ones farther) or farthest",
      ),
    seed: z.number().int().min(0).max(0xffffffff).default(0).describe("seed of --anchors random:N"),
    ...stageOutputFields("beams", "anchors"),
  })
  .strict();
export type BeamsSettings = z.output<typeof BeamsSettingsSchema>;
export type BeamsSettingsInput = z.input<typeof BeamsSettingsSchema>;

export type BeamsHooks = StageHooks;

/** One stored anchor: its beams (best first), the baseline and the requests it took. */
interface StoredAnchor {
  beams: { selected: string[]; score: number; shotScores: number[] }[];
  baseLogprob: number;
  requests: number;
}

export interface BeamsResult {
  runId: string;
  resumed: boolean;
  /** The artefact (null when anchors failed or the run was interrupted). */
  artifact: (ArtifactRef & { name: string }) | null;
  anchors: { planned: number; skipped: number; searched: number; failed: number };
  /** Answers scored per anchor (before any cache), over every done anchor. */
  requestsPerAnchor: { mean: number; min: number; max: number };
  /** Cumulative InfoScore of each done anchor's best beam, and log P(y | no demonstrations). */
  bestScore: { mean: number; min: number; max: number };
  baseLogprob: { mean: number; min: number; max: number };
  vlm: VlmCalls;
  failures: { anchor: string; error: string }[];
  aborted: boolean;
  seconds: number;
}

export async function runBeams(
  ws: Workspace,
  settings: BeamsSettings,
  vlmSettings: VlmSettings,
  hooks: BeamsHooks = {},
): Promise<BeamsResult> {
  const started = performance.now();
  checkWritable(ws, beamArtifactPath(settings.out), settings.replace); // the name and --replace, before any work
  const inputs = openStageInputs(ws, settings, settings.anchors, "--anchors");
  const search = searchSettings(settings, inputs.pools.set.k);
  const prior = budgetPrior(ws, settings, inputs.index.name, search);
  const stage = openVlmStage(ws, vlmSettings, inputs.dataset, settings.seed, hooks);
  const record = searchRecord(settings, search, stage.vlm.backend.id, inputs.pools.ref);
  const config = runConfig(settings, inputs, record, prior.embeddings);
  const run = openItemRun(stage, BEAMS_STAGE, config, settings.seed);
  const anchor: AnchorSearch = { ...inputs, search, prior: prior.similarity, vlm: stage.vlm.vlm, signal: hooks.signal };
  const items = await runVlmItems<StoredAnchor>(stage, run, {
    items: inputs.items,
    concurrency: settings.concurrency,
    // Beam search only scores answers: the server must return prompt log-probabilities.
    scoring: true,
    work: (query) => searchOne(anchor, query),
  });

  const result = beamsResult(run, inputs.items.length, items, vlmCalls(stage));
  logStageMetrics(stage, run, beamsMetrics(result, items.done.size), result.vlm);
  if (!items.aborted) {
    if (result.failures.length > 0) run.fail(`${result.failures.length} of ${inputs.items.length} anchors failed`);
    else {
      const ref = writeBeamSet(ws, settings.out, beamSet(settings, inputs, record, items.done), {
        replace: settings.replace,
      });
      run.complete([ref]);
      result.artifact = { ...ref, name: settings.out };
    }
  }
  result.seconds = secondsSince(started);
  return result;
}

/** The search settings for pools of K candidates (a budget of K or more is exhaustive: none). */
function searchSettings(
  settings: Pick<BeamsSettings, "beamSize" | "shots" | "order" | "budget">,
  K: number,
): BeamSearchSettings {
  const search: BeamSearchSettings = {
    beamSize: settings.beamSize,
    shots: settings.shots,
    order: settings.order,
    budget: settings.budget !== undefined && settings.budget < K ? settings.budget : null,
  };
  checkSearchSettings(search, K);
  return search;
}

/**
 * With a budget, the similarity that ranks each anchor's candidates (cosine of the prior embedding)
 * and the embeddings it reads (sha256 by `dataset/kind`, part of the run's identity); without, neither.
 */
function budgetPrior(
  ws: Workspace,
  settings: Pick<BeamsSettings, "dataset" | "priorEmbedding">,
  indexDataset: string,
  search: BeamSearchSettings,
): { similarity?: Similarity; embeddings: Record<string, string> } {
  const embeddings: Record<string, string> = {};
  if (search.budget === null) return { embeddings };
  const kind = settings.priorEmbedding;
  const similarity = new Similarity(
    loadQueryEmbedding(ws, settings.dataset, kind),
    loadDatasetEmbedding(ws, indexDataset, kind),
  );
  for (const name of new Set([settings.dataset, indexDataset]))
    embeddings[`${name}/${kind}`] = ws.getEmbedding(name, kind)!.sha256;
  return { similarity, embeddings };
}

/** How the beams were made, as the artefact records it (`search`). */
function searchRecord(
  settings: BeamsSettings,
  search: BeamSearchSettings,
  vlm: string,
  pools: PoolRef,
): BeamSearchRecord {
  return {
    method: "infoscore",
    answer: "multiple_choice_answer",
    beamSize: search.beamSize,
    shots: search.shots,
    budget: search.budget,
    prior: { similarity: "cosine", embedding: settings.priorEmbedding },
    vlm,
    anchors: settings.anchors,
    seed: settings.seed,
    pools,
  };
}

/** The run's config: its hash identifies the run, so re-running the same command resumes it. */
function runConfig(
  settings: BeamsSettings,
  inputs: StageInputs,
  record: BeamSearchRecord,
  embeddings: Record<string, string>,
): Record<string, unknown> {
  return {
    format: "lever.beams-run/1",
    dataset: { name: inputs.dataset.name, items: inputs.dataset.itemsHash },
    index: { name: inputs.index.name, items: inputs.index.itemsHash },
    order: settings.order,
    search: record,
    embeddings,
  };
}

/** What searching one anchor reads. */
interface AnchorSearch {
  pools: ResolvedPools;
  indexById: ReadonlyMap<string, VqaItem>;
  search: BeamSearchSettings;
  /** Ranks the candidates for the budget (absent: exhaustive). */
  prior?: Similarity;
  vlm: Vlm;
  signal?: AbortSignal;
}

/** The beam search of one anchor over its pool; a failed VLM request fails the anchor. */
async function searchOne(context: AnchorSearch, query: VqaItem): Promise<ItemOutcome<StoredAnchor>> {
  const key = query.questionId;
  const ids = context.pools.set.pools[key];
  const found = await searchAnchor(
    {
      query,
      pool: poolItems(ids, context.indexById, key),
      prior: context.prior?.toCandidates(key, ids),
    },
    context.search,
    (requests) => context.vlm.scoreAnswer(requests, { signal: context.signal }),
  );
  if (!found.ok) return { ok: false, error: found.error };
  return {
    ok: true,
    value: {
      beams: found.beams.map((b) => ({ selected: b.selected, score: b.score, shotScores: b.shotScores })),
      baseLogprob: found.baseLogprob,
      requests: found.requests,
    },
  };
}

/** The result of a run whose items are done, failed or interrupted (no artefact yet, seconds 0). */
function beamsResult(run: StageRun, planned: number, items: ItemStageResult<StoredAnchor>, vlm: VlmCalls): BeamsResult {
  const stored = [...items.done.values()];
  const failures = [...items.failed].map(([anchor, error]) => ({ anchor, error }));
  return {
    runId: run.runId,
    resumed: run.opened !== "new",
    artifact: null,
    anchors: {
      planned,
      skipped: items.skipped,
      searched: items.processed - failures.length,
      failed: failures.length,
    },
    requestsPerAnchor: summary(stored.map((a) => a.requests)),
    bestScore: summary(stored.map((a) => a.beams[0]?.score ?? Number.NaN)),
    baseLogprob: summary(stored.map((a) => a.baseLogprob)),
    vlm,
    failures,
    aborted: items.aborted,
    seconds: 0,
  };
}

function beamsMetrics(result: BeamsResult, done: number): [string, number][] {
  return [
    ["anchors.done", done],
    ["anchors.failed", result.failures.length],
    ["requests_per_anchor.mean", result.requestsPerAnchor.mean],
    ["best_score.mean", result.bestScore.mean],
    ["base_logprob.mean", result.baseLogprob.mean],
  ];
}

/** The artefact: every anchor's stored beams, in the anchors' (question-id) order. */
function beamSet(
  settings: BeamsSettings,
  inputs: StageInputs,
  record: BeamSearchRecord,
  done: ReadonlyMap<string, StoredAnchor>,
): BeamSet {
  const queries: Record<string, BeamQuery> = {};
  for (const anchor of inputs.items) {
    const a = done.get(anchor.questionId)!;
    queries[anchor.questionId] = {
      beams: a.beams,
      fewShotNum: record.shots,
      pool: inputs.pools.ref,
      baseLogprob: a.baseLogprob,
      requests: a.requests,
    };
  }
  return {
    format: "lever.beams/1",
    dataset: settings.dataset,
    promptOrder: settings.order,
    queries,
    search: record,
  };
}

function summary(values: readonly number[]): { mean: number; min: number; max: number } {
  if (values.length === 0) return { mean: 0, min: 0, max: 0 };
  return {
    mean: mean(values),
    min: minOf(values),
    max: maxOf(values),
  };
}

/**
 * The error a run stopped by Ctrl-C (`result.aborted`) ends with: what it kept; `hint` (how to resume,
 * in the caller's words) is appended when given.
 */
export function beamsInterrupted(result: Pick<BeamsResult, "anchors" | "runId">, hint?: string): InterruptedError {
  const { skipped, searched, planned } = result.anchors;
  return new InterruptedError(
    `beam search run ${result.runId} stopped after ${skipped + searched} of ${planned} anchors (those are stored)` +
      (hint === undefined ? "" : `; ${hint}`),
  );
}

/** The one-line error a run with failed anchors ends with. */
export function failedAnchorsError(result: Pick<BeamsResult, "failures" | "anchors" | "runId">): LeverError {
  const first = result.failures[0];
  return new LeverError(
    `${result.failures.length} of ${result.anchors.planned} anchors failed (first: ${first.anchor}: ${first.error}); ` +
      "no artefact written; rerun the same command to retry them",
    { record: result.runId },
  );
}
