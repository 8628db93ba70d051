/**
 * Do no harm (`lever run`'s guard, docs/experiments.md "The final method"): before the evaluation, each
 * variant's final selector — the checkpoint of its last training stage — is evaluated against the top-k
 * prior (top-k on the embedding the selector reads) on TRAINING questions that no stage of the variant
 * trained on (not a beam anchor, not a rollout query, not an online query), with the VLM, at every
 * shot count of the evaluation. At a shot count where the selector's mean accuracy there is not above
 * the prior's by more than `guard.margin` points, the variant's final method falls back to the prior.
 *
 * The evaluation split is never read for this decision. The guard's predictions are an evaluation run
 * of their own (`<name>-guard-<id>`, id a hash of the evaluation's identity, the final stage, the guard's
 * settings and the questions left out; resumable and reused like any other), so the numbers behind
 * every decision are stored; the decisions are recomputed from them (cheap) on every `lever run`.
 * The final method itself (`final:<label>`) is written into the evaluation run by `finalRows`: at each
 * shot count, the stored predictions of the method the guard chose — no VLM call, nothing re-sent.
 */
import { parseEvalOptions } from "../eval/config.js";
import { evalInterrupted, evaluate } from "../eval/evaluate.js";
import { compareMethods, DEFAULT_RESAMPLES, DEFAULT_TEST } from "../metrics/compare.js";
import { readBeamSet, readPoolSet, readRolloutSet } from "../store/sets.js";
import type { PredictionRow } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { onlineQueryIds } from "../train/rl-data.js";
import { hashValue } from "../util/hash.js";
import type { ProgressStream } from "../util/progress.js";
import type { PlannedVariant } from "./plan.js";
import { onlineGrpoConfig } from "./schema.js";
import { type DataOutputs, type StageName, type StageOutputMap, type StageOutputs, withWorld } from "./stages.js";

/** One shot count's decision. */
export interface GuardDecision {
  shot: number;
  /** Selector − prior in points on the guard's questions, with the paired 95 % bootstrap interval. */
  difference: number;
  lower: number;
  upper: number;
  /** Exact McNemar p (unadjusted; the decision does not test, it estimates). */
  p: number;
  questions: number;
  keep: boolean;
}

export interface GuardResult {
  /** The guard's evaluation run. */
  runId: string;
  /** The final training stage's label and its checkpoint's retriever name in the evaluation. */
  label: string;
  selector: string;
  prior: string;
  decisions: GuardDecision[];
}

interface Hooks {
  log(line: string): void;
  progress: ProgressStream | null;
  signal?: AbortSignal;
}

/** The outputs of one of the variant's stages (undefined when the variant has no such stage or it did not run). */
export function outputOf<S extends StageName>(
  pv: PlannedVariant,
  outputs: StageOutputMap,
  stage: S,
): StageOutputs[S] | undefined {
  const s = pv.stages.find((x) => x.stage === stage);
  return s === undefined ? undefined : (outputs.get(`${stage}-${s.id}`) as StageOutputs[S] | undefined);
}

/** The variant's final stage (the last trained one in table order) and its checkpoint, if it trained any. */
export function finalStage(
  pv: PlannedVariant,
  outputs: StageOutputMap,
): { id: string; label: string; file: string } | null {
  let last: { id: string; label: string; file: string } | null = null;
  for (const s of pv.stages) {
    const out = outputs.get(`${s.stage}-${s.id}`);
    if (out !== undefined && "bestFile" in out) last = { id: `${s.stage}-${s.id}`, label: s.label, file: out.bestFile };
  }
  return last;
}

/** Training questions any stage of the variant trained on: beam anchors, rollout queries, online queries. */
export function trainedQueries(ws: Workspace, pv: PlannedVariant, outputs: StageOutputMap): Set<string> {
  const used = new Set<string>();
  const add = (ids: Iterable<string>) => {
    for (const id of ids) used.add(id);
  };
  const e = pv.variant.experiment;
  for (const s of pv.stages) {
    const out = outputs.get(`${s.stage}-${s.id}`);
    if (out === undefined) continue;
    if (s.stage === "beams" && "name" in out) add(Object.keys(readBeamSet(ws, out.name).queries));
    if (s.stage === "rollouts" && "name" in out) add(Object.keys(readRolloutSet(ws, out.name).queries));
    const pools = outputOf(pv, outputs, "pools");
    if (s.stage === "online" && e.online !== undefined && pools !== undefined) {
      const config = onlineGrpoConfig(e.online);
      add(onlineQueryIds(ws.loadItems(pools.train), readPoolSet(ws, pools.name), config.online.queries, config.seed));
    }
  }
  return used;
}

/** Runs (or reuses) the guard of one variant; null when it is off or the variant trained nothing. */
export async function guardVariant(
  ws: Workspace,
  pv: PlannedVariant,
  outputs: StageOutputMap,
  selectorPath: (label: string, file: string) => string,
  hooks: Hooks,
): Promise<GuardResult | null> {
  const e = pv.variant.experiment;
  const final = finalStage(pv, outputs);
  if (!e.guard.enabled || final === null) return null;
  const data = outputOf(pv, outputs, "data") as DataOutputs;
  const prior = `topk-${e.embedding}`;
  const path = selectorPath(final.label, final.file);
  const exclude = trainedQueries(ws, pv, outputs);
  const left = ws.loadItems(data.train).filter((item) => !exclude.has(item.questionId)).length;
  const queries = guardQueries(e.guard.queries, left);
  hooks.log(
    `guard ${final.label}: ${final.label} vs ${prior} on ${queries} of ${left} training questions no stage trained on`,
  );
  const { shots, seed, metricVariant, order, batchSize, concurrency } = e.eval;
  const result = await evaluate(
    ws,
    parseEvalOptions({
      ...withWorld(e.vlm, data),
      dataset: data.train,
      index: data.train,
      queries,
      shots: shots.filter((s) => s > 0),
      seed,
      metricVariant,
      order,
      batchSize,
      concurrency,
      retrievers: [prior, `selector:${path}`],
      // Named by what it asks: the evaluation's settings, the final stage, the guard's settings, the questions left out.
      run: `${e.name}-guard-${hashValue({ eval: pv.evalId, final: final.id, guard: e.guard, exclude: [...exclude].sort() }).slice(0, 10)}`,
      poolSampler: e.pools.sampler,
      k: e.pools.k,
      selectorEmbedding: e.embedding,
    }),
    { signal: hooks.signal, progress: hooks.progress, exclude },
  );
  if (result.stats.aborted) throw evalInterrupted(result);
  const rows = ws.getPredictions(result.runId);
  const selector = result.retrievers.find((r) => r.startsWith("selector:")) ?? `selector:${path}`;
  const decisions = decide(rows, selector, prior, e.guard.margin, seed);
  for (const d of decisions)
    hooks.log(
      `guard ${final.label} @${d.shot}: ${d.difference >= 0 ? "+" : ""}${d.difference.toFixed(2)} ` +
        `[${d.lower.toFixed(2)}, ${d.upper.toFixed(2)}] points vs ${prior} on ${d.questions} questions → ` +
        (d.keep ? "selector kept" : `falls back to ${prior}`),
    );
  return { runId: result.runId, label: final.label, selector, prior, decisions };
}

/** `random:N` capped at what is left ("all" when fewer are left). */
function guardQueries(spec: string, left: number): string {
  const m = /^(random|first):(\d+)$/.exec(spec);
  return m !== null && Number(m[2]) >= left ? "all" : spec;
}

/** Per shot: the selector − prior difference on the guard's questions and whether the selector is kept. */
export function decide(
  rows: readonly PredictionRow[],
  selector: string,
  prior: string,
  margin: number,
  seed: number,
): GuardDecision[] {
  const methods = [prior, selector].map((retriever) => ({
    id: retriever,
    label: retriever === prior ? prior : "selector",
    rows: rows.filter((r) => r.retriever === retriever),
  }));
  const result = compareMethods(methods, {
    baseline: prior,
    subsets: ["all"],
    seed,
    resamples: DEFAULT_RESAMPLES,
    test: DEFAULT_TEST,
  });
  const table = result.tables[0];
  const row = table?.rows.find((r) => r.row === selector);
  if (row === undefined) return [];
  return row.cells.flatMap((cell) =>
    cell?.comparison == null
      ? []
      : [
          {
            shot: cell.shot,
            difference: cell.comparison.difference,
            lower: cell.comparison.ci.lower,
            upper: cell.comparison.ci.upper,
            p: cell.comparison.pValue,
            questions: cell.comparison.pairs,
            keep: cell.comparison.difference > margin,
          },
        ],
  );
}

/**
 * The final method's rows in the evaluation run (`final:<label>`): at each shot, copies of the stored
 * predictions of the selector where the guard kept it, of the prior elsewhere (also where it could not
 * decide). Replaces earlier copies.
 */
export function finalRows(evalRows: readonly PredictionRow[], guard: GuardResult, selector: string): PredictionRow[] {
  const name = `final:${guard.label}`;
  const keep = new Map(guard.decisions.map((d) => [d.shot, d.keep]));
  // A shot count the guard could not decide (no scored pair there) keeps the prior.
  return evalRows
    .filter((r) => r.shot > 0 && r.retriever === (keep.get(r.shot) === true ? selector : guard.prior))
    .map((r) => ({ ...r, retriever: name }));
}
