/**
 * Our internal, question-id-keyed models of demonstration sequences (docs/architecture.md, "Identities"):
 * beam-search data (`BeamSet`) and scored rollouts (`RolloutSet`). Every sequence lists ICD
 * question ids in SELECTION order (first selected first); how that maps onto the prompt is the
 * set's recorded `promptOrder` (docs/architecture.md), the same setting `lever eval --order` takes:
 *  - "farthest": the first selected ICD is leftmost in the prompt (farthest from the query);
 *  - "nearest":  the first selected ICD sits next to the query (Lever-Plus beam data, built with
 *                construct_order "left", docs/provenance.md#infoscore; RICES places the most similar
 *                demonstration there too).
 */
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { maxOf, minOf } from "../util/extent.js";
import { parseOrThrow } from "../util/validate.js";

export const PROMPT_ORDERS = ["nearest", "farthest"] as const;
export const PromptOrderSchema = z.enum(PROMPT_ORDERS);
export type PromptOrder = z.infer<typeof PromptOrderSchema>;

/** Selection order (first selected first) → prompt order (index 0 rendered first; the query follows). */
export function toPromptOrder<T>(selected: readonly T[], order: PromptOrder): T[] {
  return order === "farthest" ? [...selected] : [...selected].reverse();
}

/** Prompt order → selection order: the inverse of `toPromptOrder` for the same setting. */
export function fromPromptOrder<T>(prompt: readonly T[], order: PromptOrder): T[] {
  return toPromptOrder(prompt, order);
}

const finite = z.number().refine(Number.isFinite, "must be a finite number");
const questionId = z.string().min(1);

/** Where an imported artefact came from, for provenance. */
export const SourceSchema = z.object({
  format: z.string(),
  file: z.string().optional(),
  sha256: z.string().optional(),
  /** Free-form import settings (construct order, flavour, …). */
  settings: z.record(z.string(), z.unknown()).optional(),
});

// ── beam data ───────────────────────────────────────────────────────────────────────────────

export const BeamSchema = z.object({
  /** ICD question ids in selection order. */
  selected: z.array(questionId).min(1),
  /**
   * The producer's score of the sequence. `lever beams`: the cumulative InfoScore
   * log P(y | all ICDs) − log P(y | none); Lever-Plus: the InfoScore gain of the LAST added ICD only.
   */
  score: finite,
  /** Per-step scores in selection order, when recorded (`lever beams`: each step's InfoScore gain). */
  shotScores: z.array(finite).optional(),
});
export type Beam = z.infer<typeof BeamSchema>;

/** The stored pool set a query's candidates came from (name under artifacts/pools/ and its sha256). */
export const PoolRefSchema = z.object({ set: z.string().min(1), sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict();
export type PoolRef = z.infer<typeof PoolRefSchema>;

export const BeamQuerySchema = z.object({
  beams: z.array(BeamSchema),
  /** Lever-Plus `few_shot_num` (the search depth), when recorded. */
  fewShotNum: z.number().int().positive().optional(),
  /** `lever beams`: the pool the beams were searched in. */
  pool: PoolRefSchema.optional(),
  /** `lever beams`: log P(y | no demonstrations), the baseline of every cumulative score. */
  baseLogprob: finite.optional(),
  /** `lever beams`: answers scored by the VLM for this query (before any cache). */
  requests: z.number().int().nonnegative().optional(),
  /** Other per-query producer fields, verbatim (not interpreted, not re-mapped). */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type BeamQuery = z.infer<typeof BeamQuerySchema>;

/**
 * How `lever beams` searched (absent from imported sets). The answer y is the query's
 * `multiple_choice_answer` (the most frequent of its annotator answers); InfoScore(c | S) =
 * log P(y | S + c, query) − log P(y | S, query), log P summed over the answer tokens only.
 */
export const BeamSearchRecordSchema = z
  .object({
    method: z.literal("infoscore"),
    answer: z.literal("multiple_choice_answer"),
    beamSize: z.number().int().positive(),
    shots: z.number().int().positive(),
    /** Candidates scored per beam and step (the top ones by `prior`); null = every candidate. */
    budget: z.number().int().positive().nullable(),
    /** The budget's prior: cosine similarity of candidate and anchor embeddings of this kind. */
    prior: z.object({ similarity: z.literal("cosine"), embedding: z.string() }).strict(),
    /** The VLM that scored (backend id). */
    vlm: z.string(),
    anchors: z.string(),
    seed: z.number().int(),
    pools: PoolRefSchema,
  })
  .strict();
export type BeamSearchRecord = z.infer<typeof BeamSearchRecordSchema>;

export const BeamSetSchema = z.object({
  format: z.literal("lever.beams/1"),
  /** Dataset holding both the queries (anchors) and the ICDs. */
  dataset: z.string(),
  promptOrder: PromptOrderSchema,
  /** queryId → its beams, best first. */
  queries: z.record(questionId, BeamQuerySchema),
  source: SourceSchema.optional(),
  search: BeamSearchRecordSchema.optional(),
});
export type BeamSet = z.infer<typeof BeamSetSchema>;

// ── rollouts ────────────────────────────────────────────────────────────────────────────────

const nullableFinite = finite.nullable();
/** A finite number in [lo, hi]; `hiText` names the bound when it is not a plain number. */
const between = (lo: number, hi: number, hiText = String(hi)) =>
  finite.refine((x) => x >= lo && x <= hi, `must be in [${lo}, ${hiText}]`);
const logprob = finite.refine((x) => x <= 0, "a log-probability must be ≤ 0");
/**
 * Upper bound of `vqaGtProb`: Σ_a acc(a)·P(a) ≤ Σ_a acc(a) ≤ 10/3 over the distinct answers of ten
 * annotators (acc(a) ≤ n_a/3). Ours is also ≤ 1; Lever-Plus's (P(a) the exp of a per-token MEAN over a
 * mis-masked span) can exceed 1 but not 10/3.
 */
export const MAX_GT_PROB = 10 / 3;

/** VQA accuracy, the Lever-Plus files' `vqa_acc_score`: in [0, 1]. */
export const VqaAccuracySchema = between(0, 1);

/** Upper bound of a per-item score: caption CIDEr-D per image is at most 10 (pycocoevalcap's ×10). */
export const MAX_ITEM_SCORE = 10;

/**
 * Every value rule of a trajectory's fields is here (the importer of Lever-Plus RL data checks its
 * fields with these same schemas); rules between fields are `TRAJECTORY_RULES` below.
 */
export const TrajectorySchema = z.object({
  /** ICD question ids in selection order. */
  selected: z.array(questionId).min(1),
  /** Positions of `selected` in the query's pool (present exactly when the query has a pool). */
  positions: z.array(z.number().int().nonnegative()).optional(),
  /** `lever rollouts`: greedy | beam | sample | retrieval | random | topup (Lever-Plus: beam | sample | retrieval | random). */
  genMethod: z.string().optional(),
  beamRank: z.number().int().nonnegative().nullable().optional(),
  beamScore: nullableFinite.optional(),
  /** Σ_t log p of the trajectory under the proposing selector (its own softmax temperature; ≤ 0). */
  logprobScore: logprob.nullable().optional(),
  /** Samples: Σ_t log q of the draws under the sampling temperature (q ∝ exp(scores / temperature); ≤ 0). */
  sampleLogprob: logprob.nullable().optional(),
  temperature: finite
    .refine((x) => x >= 0, "a temperature must be ≥ 0")
    .nullable()
    .optional(),
  similarityScore: nullableFinite.optional(),
  rawGeneration: z.string().nullable().optional(),
  predAnswer: z.string().nullable().optional(),
  /**
   * The task's per-item score of the prediction (src/task/): VQA accuracy in [0, 1]; a caption's
   * CIDEr-D against its references in [0, MAX_ITEM_SCORE]. The one required reward field; null only
   * for a trajectory whose VLM call failed (`evalFailed`), which no reward may use.
   */
  vqaAccScore: between(0, MAX_ITEM_SCORE).nullable(),
  /** 1 iff the prediction counts as correct (Lever-Plus: acc > 0, at least one annotator agreed). */
  vqaCorrect: z.union([z.literal(0), z.literal(1)]).optional(),
  /**
   * Expected VQA accuracy of the VLM's answer distribution under this prompt, Σ_a acc(a)·P(a) over
   * the distinct annotator answers a, acc(a) the official accuracy of a as a prediction and P(a) the
   * probability of a's answer tokens. Lever-Plus files hold Σ_a min(n_a/3, 1)·P(a) with a known
   * masking flaw in P. In [0, MAX_GT_PROB].
   */
  vqaGtProb: between(0, MAX_GT_PROB, "10/3").nullable().optional(),
  /** Σ log p of the majority annotator answer's tokens under this prompt (our rollouts; ≤ 0). */
  gtLogprob: logprob.nullable().optional(),
  /** Relevance of a wrong answer to the annotators' (Lever-Plus): token F1, edit similarity, their score; in [0, 1]. */
  vqaRelTokenF1: between(0, 1).nullable().optional(),
  vqaRelEditSim: between(0, 1).nullable().optional(),
  vqaRelScore: between(0, 1).nullable().optional(),
  /** vqaEval | fallback | error */
  evalMode: z.string().nullable().optional(),
  evalSplitUsed: z.string().nullable().optional(),
  evalFailed: z.boolean().optional(),
  /** Producer fields we do not interpret (e.g. Lever-Plus `pointer_pos`, `_fix_failed`), kept verbatim. */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type Trajectory = z.infer<typeof TrajectorySchema>;
export type TrajectoryField = keyof Trajectory;

/**
 * Rules between a trajectory's fields, checked on every stored artefact (`checkRolloutSet`) and on
 * imported RL data, where `name` turns a field into the file's own name (`vqaAccScore` → `vqa_acc_score`).
 * A failed evaluation has no score; a correct answer has an accuracy above 0, a wrong one below 1
 * (vqaCorrect is accuracy > 0, or ≥ a threshold in (0, 1]).
 */
export const TRAJECTORY_RULES: readonly {
  field: TrajectoryField;
  broken: (t: Trajectory) => boolean;
  message: (t: Trajectory, name: (field: TrajectoryField) => string) => string;
}[] = [
  {
    field: "vqaAccScore",
    broken: (t) => t.vqaAccScore === null && t.evalFailed !== true,
    message: (_, name) => `is null but the trajectory is not marked ${name("evalFailed")}`,
  },
  {
    field: "evalFailed",
    broken: (t) => t.evalFailed === true && (t.vqaAccScore !== null || t.vqaCorrect !== undefined),
    message: (t, name) =>
      `is true, yet the trajectory has a score (${t.vqaAccScore !== null ? `${name("vqaAccScore")} ${t.vqaAccScore}` : `${name("vqaCorrect")} ${t.vqaCorrect}`}); a failed evaluation has none`,
  },
  {
    field: "vqaCorrect",
    broken: (t) => t.vqaCorrect === 1 && t.vqaAccScore === 0,
    message: (_, name) => `is 1 but ${name("vqaAccScore")} is 0: no annotator gave that answer`,
  },
  {
    field: "vqaCorrect",
    broken: (t) => t.vqaCorrect === 0 && t.vqaAccScore === 1,
    message: (_, name) => `is 0 but ${name("vqaAccScore")} is 1`,
  },
];

/** The first rule `trajectory` breaks: its field and message (field names as `name` gives them). */
export function brokenTrajectoryRule(
  trajectory: Trajectory,
  name: (field: TrajectoryField) => string = (field) => field,
): { field: TrajectoryField; message: string } | undefined {
  const rule = TRAJECTORY_RULES.find((r) => r.broken(trajectory));
  return rule === undefined ? undefined : { field: rule.field, message: rule.message(trajectory, name) };
}

export const RolloutQuerySchema = z.object({
  /** The query's candidate pool (question ids), when trajectories were drawn from a fixed pool. */
  pool: z.array(questionId).optional(),
  trajectories: z.array(TrajectorySchema),
  /** Producer's description of the query (Lever-Plus `query` block minus its row index), verbatim. */
  info: z.record(z.string(), z.unknown()).optional(),
  /** Other per-query producer fields, verbatim. */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type RolloutQuery = z.infer<typeof RolloutQuerySchema>;

export const RolloutSetSchema = z.object({
  format: z.literal("lever.rollouts/1"),
  dataset: z.string(),
  promptOrder: PromptOrderSchema,
  queries: z.record(questionId, RolloutQuerySchema),
  /** Producer-level metadata (Lever-Plus `_meta`), verbatim. */
  meta: z.record(z.string(), z.unknown()).optional(),
  /** Other producer top-level blocks (Lever-Plus keys starting with "_"), verbatim. */
  extra: z.record(z.string(), z.unknown()).optional(),
  source: SourceSchema.optional(),
});
export type RolloutSet = z.infer<typeof RolloutSetSchema>;

// ── checks the schemas cannot express ──────────────────────────────────────────────────────────

function duplicateIn(values: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const v of values) {
    if (seen.has(v)) return v;
    seen.add(v);
  }
  return undefined;
}

/** At least one beam; no ICD twice in a beam; per-shot scores match the beam length. */
export function checkBeamSet(set: BeamSet, file: string): void {
  if (!Object.values(set.queries).some((query) => query.beams.length > 0))
    throw new LeverError("the beam set holds no beams (an empty artefact would train and evaluate nothing)", {
      file,
      field: "queries",
    });
  for (const [queryId, query] of Object.entries(set.queries)) {
    query.beams.forEach((beam, b) => {
      const at = (field: string) => ({ file, record: queryId, field: `beams[${b}].${field}` });
      const dup = duplicateIn(beam.selected);
      if (dup !== undefined) throw new LeverError(`"${dup}" is selected twice`, at("selected"));
      if (beam.shotScores !== undefined && beam.shotScores.length !== beam.selected.length)
        throw new LeverError(`${beam.shotScores.length} scores for ${beam.selected.length} ICDs`, at("shotScores"));
    });
  }
}

/**
 * At least one trajectory; pools hold no duplicates and never the query itself (nor does a
 * trajectory select it: docs/architecture.md, "The pool contract"); a trajectory has positions exactly when its
 * query has a pool, and `pool[positions[j]] === selected[j]`; no ICD twice in a trajectory; the
 * rules between fields (`TRAJECTORY_RULES`).
 */
export function checkRolloutSet(set: RolloutSet, file: string): void {
  if (!Object.values(set.queries).some((query) => query.trajectories.length > 0))
    throw new LeverError("the rollout set holds no trajectories (an empty artefact would train nothing)", {
      file,
      field: "queries",
    });
  for (const [queryId, query] of Object.entries(set.queries)) {
    const { pool } = query;
    if (pool !== undefined) {
      const dup = duplicateIn(pool);
      if (dup !== undefined) throw new LeverError(`"${dup}" appears twice`, { file, record: queryId, field: "pool" });
      const self = pool.indexOf(queryId);
      if (self >= 0)
        throw new LeverError(`"${queryId}" is the query itself: a query is never its own candidate`, {
          file,
          record: queryId,
          field: `pool[${self}]`,
        });
    }
    query.trajectories.forEach((trajectory, t) => {
      const at = (field: string) => ({ file, record: queryId, field: `trajectories[${t}].${field}` });
      const dup = duplicateIn(trajectory.selected);
      if (dup !== undefined) throw new LeverError(`"${dup}" is selected twice`, at("selected"));
      const self = trajectory.selected.indexOf(queryId);
      if (self >= 0)
        throw new LeverError(
          `"${queryId}" is the query itself: a query is never its own demonstration`,
          at(`selected[${self}]`),
        );
      const broken = brokenTrajectoryRule(trajectory);
      if (broken !== undefined) throw new LeverError(broken.message, at(broken.field));
      const { positions } = trajectory;
      if ((pool === undefined) !== (positions === undefined))
        throw new LeverError(
          pool === undefined ? "has positions but the query has no pool" : "has no positions but the query has a pool",
          at("positions"),
        );
      if (pool === undefined || positions === undefined) return;
      if (positions.length !== trajectory.selected.length)
        throw new LeverError(`${positions.length} positions for ${trajectory.selected.length} ICDs`, at("positions"));
      positions.forEach((p, j) => {
        if (p >= pool.length) throw new LeverError(`${p} is outside the pool of ${pool.length}`, at(`positions[${j}]`));
        if (pool[p] !== trajectory.selected[j])
          throw new LeverError(`pool[${p}] is "${pool[p]}", not "${trajectory.selected[j]}"`, at(`positions[${j}]`));
      });
    });
  }
}

/** Parses a stored beam artefact, with errors naming the file, query and field. */
export function parseBeamSet(json: unknown, file: string): BeamSet {
  const set = parseOrThrow(BeamSetSchema, json, { file, recordsAt: "queries" });
  checkBeamSet(set, file);
  return set;
}

/** Parses a stored rollout artefact, with errors naming the file, query and field. */
export function parseRolloutSet(json: unknown, file: string): RolloutSet {
  const set = parseOrThrow(RolloutSetSchema, json, { file, recordsAt: "queries" });
  checkRolloutSet(set, file);
  return set;
}

// ── summaries (for CLI output and reports) ─────────────────────────────────────────────────────

export interface BeamSetSummary {
  queries: number;
  beams: number;
  shots: number[];
  promptOrder: PromptOrder;
}

export function summarizeBeamSet(set: BeamSet): BeamSetSummary {
  const all = Object.values(set.queries).flatMap((q) => q.beams);
  return {
    queries: Object.keys(set.queries).length,
    beams: all.length,
    shots: [...new Set(all.map((b) => b.selected.length))].sort((a, b) => a - b),
    promptOrder: set.promptOrder,
  };
}

export interface RolloutSetSummary {
  queries: number;
  trajectories: number;
  /** Fewest and most trajectories of one query. */
  perQuery: { min: number; max: number };
  queriesWithPool: number;
  shots: number[];
  /** Trajectories whose evaluation failed (left out of the accuracy figures). */
  failed: number;
  /** Mean VQA accuracy and fraction of trajectories with accuracy > 0 (scored trajectories only). */
  meanAcc: number;
  positiveFraction: number;
  /** Queries whose trajectories have both acc > 0 and acc = 0 (useful for group-relative RL). */
  mixedQueries: number;
  promptOrder: PromptOrder;
}

export function summarizeRolloutSet(set: RolloutSet): RolloutSetSummary {
  const queries = Object.values(set.queries);
  const all = queries.flatMap((q) => q.trajectories);
  const counts = queries.map((q) => q.trajectories.length);
  const accuracies = all.flatMap((t) => (t.evalFailed || t.vqaAccScore === null ? [] : [t.vqaAccScore]));
  const positives = accuracies.filter((a) => a > 0).length;
  return {
    queries: queries.length,
    trajectories: all.length,
    perQuery: { min: counts.length > 0 ? minOf(counts) : 0, max: counts.length > 0 ? maxOf(counts) : 0 },
    queriesWithPool: queries.filter((q) => q.pool !== undefined).length,
    shots: [...new Set(all.map((t) => t.selected.length))].sort((a, b) => a - b),
    failed: all.length - accuracies.length,
    meanAcc: accuracies.length > 0 ? accuracies.reduce((s, a) => s + a, 0) / accuracies.length : Number.NaN,
    positiveFraction: accuracies.length > 0 ? positives / accuracies.length : Number.NaN,
    mixedQueries: queries.filter(
      (q) =>
        q.trajectories.some((t) => !t.evalFailed && (t.vqaAccScore ?? 0) > 0) &&
        q.trajectories.some((t) => !t.evalFailed && t.vqaAccScore === 0),
    ).length,
    promptOrder: set.promptOrder,
  };
}
