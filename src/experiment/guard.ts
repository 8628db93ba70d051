/**
 * Do no harm (`lever run`'s guard, docs/experiments.md "The final method"): before the evaluation, each
 * variant's final selector — the checkpoint of its last training stage — and the guard's baselines
 * (`guard.baselines`, default the `vote`: no-training retrievers a deployment can run instead) are
 * evaluated against the top-k prior (top-k on the embedding the selector reads) on TRAINING questions
 * that no stage of the variant trained on (not a beam anchor, not a rollout query, not an online query),
 * with the VLM, at every shot count of the evaluation. At each shot count the final method is, among the
 * candidates SIGNIFICANTLY better than the prior there (the lower end of the paired 95 % bootstrap interval
 * of candidate − prior above `guard.margin` points), the one with the largest gain (ties: the selector,
 * then the baselines in their order); the prior where no candidate is. The guard ships nothing it has not
 * shown to beat the prior: a gain the guard's questions cannot tell from noise stays with the prior.
 *
 * The evaluation split is never read for this decision; the vote is validated at the scale the evaluation
 * will use (calibrated on the index's annotations alone). The guard's predictions are an evaluation run
 * of their own (`<name>-guard-<id>`, id a hash of the evaluation's identity, the final stage, the guard's
 * settings and the questions left out, src/experiment/identity.ts; an earlier build's guard run keeps its
 * name; resumable and reused like any other), so the numbers behind
 * every decision are stored; the decisions are recomputed from them (cheap) on every `lever run`.
 * The final method itself (`final:<label>`) is written into the evaluation run by `finalRows`: at each
 * shot count, the stored predictions of the method the guard chose — no VLM call, nothing re-sent.
 */

import { parseEvalOptions } from "../eval/config.js";
import { evalInterrupted, evaluate } from "../eval/evaluate.js";
import { evaluationVoteScale } from "../eval/setup.js";
import { compareMethods, DEFAULT_RESAMPLES, DEFAULT_TEST } from "../metrics/compare.js";
import { readBeamSet, readPoolSet, readRolloutSet } from "../store/sets.js";
import type { PredictionRow } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { datasetTask } from "../task/dataset-task.js";
import { onlineQueryIds } from "../train/data/rl-groups.js";
import type { ProgressStream } from "../util/progress.js";
import { guardRunNames, type Identities, runName } from "./identity.js";
import type { PlannedVariant } from "./plan.js";
import { onlineGrpoConfig } from "./schema.js";
import {
  type DataOutputs,
  type StageName,
  type StageOutputMap,
  type StageOutputs,
  trainedOutputs,
  withWorld,
} from "./stages.js";

/** One candidate at one shot count: its accuracy − the prior's on the guard's questions. */
export interface GuardCandidate {
  retriever: string;
  /** Points, with the paired 95 % bootstrap interval. */
  difference: number;
  lower: number;
  upper: number;
  /** Exact McNemar p (unadjusted; the decision does not test, it estimates). */
  p: number;
}

/** One shot count's decision. */
export interface GuardDecision {
  shot: number;
  questions: number;
  /** The selector's comparison with the prior first, then each guard baseline's. */
  candidates: GuardCandidate[];
  /** The retriever the final method is at this shot count: a candidate, or the prior. */
  choice: string;
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
): (Identities & { label: string; file: string }) | null {
  let last: (Identities & { label: string; file: string }) | null = null;
  for (const s of pv.stages) {
    const out = trainedOutputs(s.stage, outputs, s.id);
    if (out !== undefined)
      last = {
        id: `${s.stage}-${s.id}`,
        legacyId: s.legacyId === null ? null : `${s.stage}-${s.legacyId}`,
        label: s.label,
        file: out.bestFile,
      };
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
  const task = datasetTask(ws.requireDataset(data.train));
  const baselines = (e.guard.baselines ?? task.guardBaselines).filter((b) => b !== prior);
  const versus = [final.label, ...baselines].join(", ");
  hooks.log(
    `guard ${final.label}: ${versus} vs ${prior} on ${queries} of ${left} training questions no stage trained on`,
  );
  const { shots, seed, metricVariant, order, batchSize, concurrency } = e.eval;
  // The vote the evaluation will run: the scale calibrated on the index (or eval.voteScale), not one
  // calibrated with these training questions left out.
  const voteScale = baselines.includes("vote")
    ? evaluationVoteScale(ws, {
        dataset: data.val,
        index: data.train,
        poolSampler: e.pools.sampler,
        k: e.pools.k,
        voteScale: e.eval.voteScale,
      }).scale
    : undefined;
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
      retrievers: [prior, ...baselines, `selector:${path}`],
      ...(voteScale !== undefined ? { voteScale } : {}),
      // Named by what it asks: the evaluation's settings, the final stage, the guard's settings, the questions left out.
      run: runName(ws, "eval", guardRunNames(e, { id: pv.evalId, legacyId: pv.legacyEvalId }, final, exclude)),
      poolSampler: e.pools.sampler,
      k: e.pools.k,
      selectorEmbedding: e.embedding,
    }),
    { signal: hooks.signal, progress: hooks.progress, exclude },
  );
  if (result.stats.aborted) throw evalInterrupted(result);
  const rows = ws.getPredictions(result.runId);
  const selector = result.retrievers.find((r) => r.startsWith("selector:")) ?? `selector:${path}`;
  const decisions = decide(rows, { selector, prior, baselines, margin: e.guard.margin, seed });
  for (const d of decisions) hooks.log(decisionText(final.label, selector, prior, d));
  return { runId: result.runId, label: final.label, selector, prior, decisions };
}

/** `guard online @1: online +2.49 [1.40, 3.56], vote +6.97 [5.63, 8.30] points vs topk-joint on 1000 questions → vote` */
function decisionText(label: string, selector: string, prior: string, d: GuardDecision): string {
  const name = (retriever: string) => (retriever === selector ? label : retriever);
  const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(2)}`;
  const candidates = d.candidates.map(
    (c) => `${name(c.retriever)} ${signed(c.difference)} [${c.lower.toFixed(2)}, ${c.upper.toFixed(2)}]`,
  );
  const choice = d.choice === prior ? `${prior} (the prior)` : name(d.choice);
  return `guard ${label} @${d.shot}: ${candidates.join(", ")} points vs ${prior} on ${d.questions} questions → ${choice}`;
}

/** `random:N` capped at what is left ("all" when fewer are left). */
function guardQueries(spec: string, left: number): string {
  const m = /^(random|first):(\d+)$/.exec(spec);
  return m !== null && Number(m[2]) >= left ? "all" : spec;
}

/** What the guard chooses between, and how. */
export interface DecideOptions {
  selector: string;
  prior: string;
  baselines: readonly string[];
  /** Points the lower end of a candidate's 95 % interval (candidate − prior) must exceed for it to be chosen. */
  margin: number;
  /** The bootstrap's seed. */
  seed: number;
}

/**
 * Per shot (where the selector was compared): each candidate's difference from the prior on the guard's
 * questions, and the choice — among the candidates whose interval's lower end is above the margin, the
 * largest gain (ties: the earlier candidate); the prior when there is none.
 */
export function decide(rows: readonly PredictionRow[], options: DecideOptions): GuardDecision[] {
  const { selector, prior, margin, seed } = options;
  const candidates = [selector, ...options.baselines.filter((b) => b !== prior && b !== selector)];
  // The selector's retriever name holds its checkpoint's path; its label (which keys the bootstrap's
  // random streams) must not, or the same answers in another workspace would get other intervals.
  const methods = [prior, ...candidates].map((retriever) => ({
    id: retriever,
    label: retriever === selector ? "selector" : retriever,
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
  const cellsOf = (retriever: string) => table?.rows.find((r) => r.row === retriever)?.cells ?? [];
  return result.shots.flatMap((shot, j) => {
    const own = cellsOf(selector)[j]?.comparison;
    if (own == null) return [];
    const compared = candidates.flatMap((retriever): GuardCandidate[] => {
      const c = cellsOf(retriever)[j]?.comparison;
      return c == null
        ? []
        : [{ retriever, difference: c.difference, lower: c.ci.lower, upper: c.ci.upper, p: c.pValue }];
    });
    let choice = prior;
    let best = Number.NEGATIVE_INFINITY;
    for (const c of compared)
      if (c.lower > margin && c.difference > best) {
        best = c.difference;
        choice = c.retriever;
      }
    return [{ shot, questions: own.pairs, candidates: compared, choice }];
  });
}

/**
 * The final method's rows in the evaluation run (`final:<label>`): at each shot, copies of the stored
 * predictions of the retriever the guard chose there (`selector` names the final selector in the
 * evaluation), of the prior where it could not decide. Replaces earlier copies.
 */
export function finalRows(evalRows: readonly PredictionRow[], guard: GuardResult, selector: string): PredictionRow[] {
  const name = `final:${guard.label}`;
  const source = chosenRetriever(guard, selector);
  return evalRows.filter((r) => r.shot > 0 && r.retriever === source(r.shot)).map((r) => ({ ...r, retriever: name }));
}

/** The evaluation retriever the final method copies at a shot count (the prior where the guard did not decide). */
export function chosenRetriever(guard: GuardResult, selector: string): (shot: number) => string {
  const choice = new Map(guard.decisions.map((d) => [d.shot, d.choice === guard.selector ? selector : d.choice]));
  return (shot) => choice.get(shot) ?? guard.prior;
}

/** The retrievers the evaluation must hold for the final method: every choice but the selector's. */
export function guardChoices(guard: GuardResult): string[] {
  return [...new Set([guard.prior, ...guard.decisions.map((d) => d.choice)])].filter((r) => r !== guard.selector);
}
