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
import { SubsetSpecSchema } from "../data/splits.js";
import type { BeamQuery, BeamSearchRecord, BeamSet } from "../data/trajectories.js";
import { PROMPT_ORDERS } from "../data/trajectories.js";
import { createVlm } from "../icl/backend.js";
import { mean } from "../metrics/stats.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import { beamArtifactPath, writeBeamSet } from "../store/sets.js";
import { openStageRun } from "../store/stage-run.js";
import type { ArtifactRef } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { maxOf, minOf } from "../util/extent.js";
import type { VlmSettings } from "../vlm/settings.js";
import { preflight } from "../vlm/types.js";
import { type BeamSearchSettings, checkSearchSettings, searchAnchor } from "./beams.js";
import { openStageInputs, poolItems, Similarity } from "./inputs.js";
import { runItems, type StageHooks, stageOutputFields } from "./stage.js";
import { type CallCounter, callCounter, type VlmCalls } from "./vlm-calls.js";

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
  beamArtifactPath(settings.out); // validate the name before any work
  const {
    dataset,
    pools,
    index: indexRecord,
    items: anchors,
    indexById,
  } = openStageInputs(ws, settings, settings.anchors, "--anchors");
  const K = pools.set.k;
  const search: BeamSearchSettings = {
    beamSize: settings.beamSize,
    shots: settings.shots,
    order: settings.order,
    budget: settings.budget !== undefined && settings.budget < K ? settings.budget : null,
  };
  checkSearchSettings(search, K);
  let similarity: Similarity | undefined;
  const embeddings: Record<string, string> = {};
  if (search.budget !== null) {
    const kind = settings.priorEmbedding;
    similarity = new Similarity(
      loadDatasetEmbedding(ws, settings.dataset, kind),
      loadDatasetEmbedding(ws, indexRecord.name, kind),
    );
    for (const name of new Set([settings.dataset, indexRecord.name]))
      embeddings[`${name}/${kind}`] = ws.getEmbedding(name, kind)!.sha256;
  }

  const counter: CallCounter = callCounter();
  const vlm = createVlm(ws, vlmSettings, dataset, {
    seed: settings.seed,
    wrapBackend: (backend) => counter.wrap(hooks.wrapBackend ? hooks.wrapBackend(backend) : backend),
  });

  const record: BeamSearchRecord = {
    method: "infoscore",
    answer: "multiple_choice_answer",
    beamSize: search.beamSize,
    shots: search.shots,
    budget: search.budget,
    prior: { similarity: "cosine", embedding: settings.priorEmbedding },
    vlm: vlm.backend.id,
    anchors: settings.anchors,
    seed: settings.seed,
    pools: pools.ref,
  };
  const config = {
    format: "lever.beams-run/1",
    dataset: { name: dataset.name, items: dataset.itemsHash },
    index: { name: indexRecord.name, items: indexRecord.itemsHash },
    order: settings.order,
    search: record,
    embeddings,
  };
  const run = openStageRun(ws, { kind: BEAMS_STAGE, config, seed: settings.seed, work: "items", note: hooks.note });
  const { runId } = run;
  run.begin();
  const anchorById = new Map(anchors.map((a) => [a.questionId, a]));
  const signal = hooks.signal;
  const items = await runItems<StoredAnchor>({
    ws,
    run,
    keys: anchors.map((a) => a.questionId),
    concurrency: settings.concurrency,
    signal,
    progress: hooks.progress,
    activity: () => counter.activity(),
    // Beam search only scores answers: the server must return prompt log-probabilities.
    beforeWork: () => preflight(vlm.vlm, { scoring: true, signal }),
    work: async (key) => {
      const query = anchorById.get(key)!;
      const ids = pools.set.pools[key];
      const found = await searchAnchor(
        {
          query,
          pool: poolItems(ids, indexById, key),
          prior: similarity?.toCandidates(key, ids),
        },
        search,
        (requests) => vlm.vlm.scoreAnswer(requests, { signal }),
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
    },
  });

  const stored = [...items.done.values()];
  const failures = [...items.failed].map(([anchor, error]) => ({ anchor, error }));
  const vlmCalls = counter.summary(vlm.vlm);
  const result: BeamsResult = {
    runId,
    resumed: run.opened !== "new",
    artifact: null,
    anchors: {
      planned: anchors.length,
      skipped: items.skipped,
      searched: items.processed - failures.length,
      failed: failures.length,
    },
    requestsPerAnchor: summary(stored.map((a) => a.requests)),
    bestScore: summary(stored.map((a) => a.beams[0]?.score ?? Number.NaN)),
    baseLogprob: summary(stored.map((a) => a.baseLogprob)),
    vlm: vlmCalls,
    failures,
    aborted: items.aborted,
    seconds: 0,
  };
  const metric = (name: string, value: number) => ({ runId, stage: BEAMS_STAGE, name, value });
  ws.logMetrics([
    metric("anchors.done", items.done.size),
    metric("anchors.failed", failures.length),
    metric("requests_per_anchor.mean", result.requestsPerAnchor.mean),
    metric("best_score.mean", result.bestScore.mean),
    metric("base_logprob.mean", result.baseLogprob.mean),
    metric("vlm.calls", vlmCalls.calls),
    metric("vlm.cache_hits", vlmCalls.cacheHits),
    metric("vlm.failures", vlmCalls.failures),
  ]);
  if (items.aborted) {
    result.seconds = (performance.now() - started) / 1000;
    return result;
  }
  if (failures.length > 0) {
    const message = `${failures.length} of ${anchors.length} anchors failed`;
    run.fail(message);
    result.seconds = (performance.now() - started) / 1000;
    return result;
  }

  const queries: Record<string, BeamQuery> = {};
  for (const anchor of anchors) {
    const a = items.done.get(anchor.questionId)!;
    queries[anchor.questionId] = {
      beams: a.beams,
      fewShotNum: search.shots,
      pool: pools.ref,
      baseLogprob: a.baseLogprob,
      requests: a.requests,
    };
  }
  const set: BeamSet = {
    format: "lever.beams/1",
    dataset: settings.dataset,
    promptOrder: settings.order,
    queries,
    search: record,
  };
  const ref = writeBeamSet(ws, settings.out, set, { replace: settings.replace });
  run.complete([ref]);
  result.artifact = { ...ref, name: settings.out };
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

function summary(values: readonly number[]): { mean: number; min: number; max: number } {
  if (values.length === 0) return { mean: 0, min: 0, max: 0 };
  return {
    mean: mean(values),
    min: minOf(values),
    max: maxOf(values),
  };
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
