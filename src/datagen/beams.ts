/**
 * InfoScore beam search for one anchor (query with a known answer y) over its pool: sequences of
 * demonstrations grown one at a time, each step keeping the `beamSize` best expansions.
 *
 *   InfoScore(c | S) = log P(y | S + c, query) − log P(y | S, query)
 *
 * with log P the VLM's `scoreAnswer` sum over the answer tokens only, and y the anchor's
 * `multiple_choice_answer` (`VqaItem.answer`, the most frequent of its annotator answers). A beam's
 * score is the sum of its step gains, which telescopes to log P(y | S) − log P(y | no demonstrations);
 * beams are ranked by it, largest first, at every step and in the result. This fixes the reference's
 * search (Lever-Plus generate_data.py, docs/provenance.md#infoscore), which kept the MOST NEGATIVE
 * candidates per beam, filtered across beams by the largest, ranked by the last step's gain alone and
 * averaged a mis-masked span.
 *
 * Where a new demonstration goes is the prompt-order setting: "nearest" — the first selected sits
 * next to the query and each new one is placed farther (Lever-Plus construct_order "left");
 * "farthest" — the first selected is leftmost and each new one goes next to the query.
 *
 * Requests: the "without c" score of a beam is the full score of the expansion that made it, so
 * only the empty prompt needs its own request; every expansion of one step goes out in ONE batched
 * `scoreAnswer` call (the empty prompt rides with step 1). With a budget M, each beam scores only
 * its M remaining candidates with the highest prior (similarity to the anchor; ties by pool
 * position). Ties between expansions are broken by beam index, then pool position, so the result
 * depends only on the scores. A failed request fails the anchor; it is never scored as anything.
 */
import type { VqaItem } from "../data/item.js";
import type { PromptOrder } from "../data/trajectories.js";
import { buildPrompt } from "../icl/answer.js";
import { LeverError } from "../util/errors.js";
import type { Outcome, ScoreResult, VlmPrompt } from "../vlm/types.js";
import { formatFailure, isFailure } from "../vlm/types.js";

export interface BeamSearchSettings {
  beamSize: number;
  shots: number;
  order: PromptOrder;
  /** Candidates scored per beam and step (the top ones by prior); null = every remaining candidate. */
  budget: number | null;
}

export interface AnchorTask {
  query: VqaItem;
  /** The anchor's candidates, in pool order. */
  pool: readonly VqaItem[];
  /** Prior per pool position (larger = scored first under a budget); needed when the budget cuts. */
  prior?: ArrayLike<number>;
}

export interface FoundBeam {
  /** Pool positions in selection order. */
  positions: number[];
  /** Their question ids. */
  selected: string[];
  /** Cumulative InfoScore: log P(y | beam) − log P(y | no demonstrations). */
  score: number;
  /** The gain of each step, in selection order (they sum to `score`). */
  shotScores: number[];
}

export type AnchorResult =
  | { ok: true; beams: FoundBeam[]; baseLogprob: number; requests: number }
  | { ok: false; error: string; requests: number };

export type ScoreFn = (requests: { prompt: VlmPrompt; answer: string }[]) => Promise<Outcome<ScoreResult>[]>;

interface Live {
  positions: number[];
  /** log P(y | this beam), known from the request that made it. */
  logprob: number;
  shotScores: number[];
}

/** Checks the settings against a pool of K candidates; throws a LeverError naming the setting. */
export function checkSearchSettings(settings: BeamSearchSettings, k: number, where: { record?: string } = {}): void {
  const { beamSize, shots, budget } = settings;
  if (!Number.isInteger(beamSize) || beamSize < 1)
    throw new LeverError(`must be a positive integer, got ${beamSize}`, { ...where, field: "beamSize" });
  if (!Number.isInteger(shots) || shots < 1 || shots > k)
    throw new LeverError(`must be an integer in [1, K = ${k}], got ${shots}`, { ...where, field: "shots" });
  if (budget !== null && (!Number.isInteger(budget) || budget < 1))
    throw new LeverError(`must be a positive integer, got ${budget}`, { ...where, field: "budget" });
}

/** Pool positions by prior, largest first, ties by position (all positions in order without a prior). */
export function rankByPrior(k: number, prior: ArrayLike<number> | undefined): number[] {
  const positions = Array.from({ length: k }, (_, i) => i);
  if (prior === undefined) return positions;
  return positions.sort((a, b) => prior[b] - prior[a] || a - b);
}

/** Searches one anchor. Throws only on misuse; VLM failures come back as `{ ok: false }`. */
export async function searchAnchor(
  task: AnchorTask,
  settings: BeamSearchSettings,
  score: ScoreFn,
): Promise<AnchorResult> {
  const { query, pool } = task;
  const K = pool.length;
  checkSearchSettings(settings, K, { record: query.questionId });
  const budget = settings.budget !== null && settings.budget < K ? settings.budget : null;
  if (budget !== null && (task.prior === undefined || task.prior.length !== K))
    throw new LeverError(`a budget of ${budget} < K = ${K} needs a prior for every candidate`, {
      record: query.questionId,
      field: "prior",
    });
  const ranked = rankByPrior(K, budget === null ? undefined : task.prior);
  const answer = query.answer;
  const byId = new Map(pool.map((item) => [item.questionId, item]));
  const prompt = (positions: readonly number[]): VlmPrompt =>
    buildPrompt(
      query,
      positions.map((p) => pool[p].questionId),
      byId,
      settings.order,
    );

  let base = Number.NaN;
  let beams: Live[] = [{ positions: [], logprob: Number.NaN, shotScores: [] }];
  let requests = 0;
  for (let step = 0; step < settings.shots; step++) {
    const expansions: { beam: number; position: number }[] = [];
    beams.forEach((beam, b) => {
      const used = new Set(beam.positions);
      let taken = 0;
      for (const p of ranked) {
        if (budget !== null && taken >= budget) break;
        if (used.has(p)) continue;
        expansions.push({ beam: b, position: p });
        taken++;
      }
    });
    const batch = expansions.map((e) => ({ prompt: prompt([...beams[e.beam].positions, e.position]), answer }));
    if (step === 0) batch.unshift({ prompt: prompt([]), answer });
    const outcomes = await score(batch);
    requests += batch.length;
    if (outcomes.length !== batch.length)
      throw new Error(`the VLM returned ${outcomes.length} scores for ${batch.length} requests`);
    const failure = firstFailure(outcomes);
    if (failure !== null) return { ok: false, error: failure, requests };
    const logprobs = outcomes.map((o) => (o as ScoreResult).logprobSum);
    if (step === 0) {
      base = logprobs.shift()!;
      beams[0].logprob = base;
    }
    const scored = expansions.map((e, i) => {
      const parent = beams[e.beam];
      return {
        ...e,
        logprob: logprobs[i],
        gain: logprobs[i] - parent.logprob,
        total: logprobs[i] - base,
      };
    });
    scored.sort((a, b) => b.total - a.total || a.beam - b.beam || a.position - b.position);
    beams = scored.slice(0, settings.beamSize).map((s) => ({
      positions: [...beams[s.beam].positions, s.position],
      logprob: s.logprob,
      shotScores: [...beams[s.beam].shotScores, s.gain],
    }));
  }
  return {
    ok: true,
    baseLogprob: base,
    requests,
    beams: beams.map((beam) => ({
      positions: beam.positions,
      selected: beam.positions.map((p) => pool[p].questionId),
      score: beam.logprob - base,
      shotScores: beam.shotScores,
    })),
  };
}

/** "reason (n of m requests failed)" for the first failed or non-finite outcome, or null. */
function firstFailure(outcomes: readonly Outcome<ScoreResult>[]): string | null {
  let first: string | null = null;
  let count = 0;
  for (const o of outcomes) {
    const reason = isFailure(o)
      ? formatFailure(o)
      : Number.isFinite(o.logprobSum)
        ? null
        : `non-finite log-probability ${o.logprobSum}`;
    if (reason === null) continue;
    count++;
    first ??= reason;
  }
  return first === null ? null : `${first} (${count} of ${outcomes.length} requests failed)`;
}
