/**
 * Lever-Plus RL data (the `rl_data*.json` files, docs/provenance.md#rl-data) ⇄ RolloutSet. Flavours handled:
 *  - "v4 strict" (generate_rl_data.py): global `pointer` rows, `query` block, full reward fields;
 *  - k64 (generate_rl_data_k64.py, fix_rl_candidate_pool_k64*.py): per-query `candidate_pool_ids`,
 *    LOCAL `pointer` positions into it and `pointer_global` rows;
 *  - VQAv2 balanced: only `pointer` (global), `vqa_pred_answer`, `vqa_acc_score`, a query block
 *    whose `gt_answers_raw` are answer dicts;
 *  - files older than 2025-12-15 without the `query` block; the top-level `_meta` block.
 * `pointer` is in prompt order, which is also the order the pointer policy chose them (ex₁ is
 * placed first), so the set's prompt order is "farthest". Fields we do not model are kept verbatim.
 * Our own fields (`gt_logprob`, `sample_logprob`) travel under their own keys; a set made with
 * another prompt order records it as `_meta.lever_prompt_order`, so export → import is lossless.
 * Impossible input is refused with one LeverError naming file, record (the row key) and field: a value
 * out of its range (`TrajectorySchema`'s rules), fields that contradict each other (`TRAJECTORY_RULES`),
 * a query without trajectories, the query among its own candidates or demonstrations (docs/datagen.md).
 */
import { z } from "zod";
import { LeverError } from "../../util/errors.js";
import { parseOrThrow } from "../../util/validate.js";
import {
  brokenTrajectoryRule,
  checkRolloutSet,
  fromPromptOrder,
  PROMPT_ORDERS,
  type PromptOrder,
  PromptOrderSchema,
  type RolloutQuery,
  type RolloutSet,
  RolloutSetSchema,
  type Trajectory,
  type TrajectoryField,
  TrajectorySchema,
  toPromptOrder,
  VqaAccuracySchema,
} from "../trajectories.js";
import type { ImportResult } from "./beams.js";
import { type DatasetIndex, findDuplicate, idOfRow, parseRowKey, rowOfId, type Where } from "./common.js";

/**
 * Raw field ⇄ Trajectory property, in the order we write them. Each raw field is checked with its
 * property's schema (`TrajectorySchema`, the one place of the value rules) and the rules between
 * fields (`TRAJECTORY_RULES`), reported under the raw names.
 */
const FIELDS = [
  ["gen_method", "genMethod"],
  ["beam_rank", "beamRank"],
  ["beam_score", "beamScore"],
  ["logprob_score", "logprobScore"],
  ["sample_logprob", "sampleLogprob"],
  ["temperature", "temperature"],
  ["similarity_score", "similarityScore"],
  ["vqa_raw_generation", "rawGeneration"],
  ["vqa_pred_answer", "predAnswer"],
  ["vqa_correct", "vqaCorrect"],
  ["vqa_acc_score", "vqaAccScore"],
  ["vqa_gt_prob", "vqaGtProb"],
  ["gt_logprob", "gtLogprob"],
  ["vqa_rel_token_f1", "vqaRelTokenF1"],
  ["vqa_rel_edit_sim", "vqaRelEditSim"],
  ["vqa_rel_score", "vqaRelScore"],
  ["vqa_eval_mode", "evalMode"],
  ["eval_split_used", "evalSplitUsed"],
  ["eval_failed", "evalFailed"],
] as const satisfies readonly (readonly [string, TrajectoryField])[];
const RAW_NAME = new Map<TrajectoryField, string>(FIELDS.map(([raw, name]) => [name, raw]));
const rawName = (field: TrajectoryField): string => RAW_NAME.get(field) ?? field;

const row = z.number().int();
const RawTrajectorySchema = z.looseObject({
  pointer: z.array(row).min(1, "must hold at least one ICD"),
  pointer_global: z.array(row).optional(),
  ...Object.fromEntries(FIELDS.map(([raw, name]) => [raw, TrajectorySchema.shape[name]])),
  // Lever-Plus RL data is VQA: its accuracy is in [0, 1] (our schema also holds caption CIDEr-D).
  vqa_acc_score: VqaAccuracySchema.nullable(),
});
type RawTrajectory = Record<string, unknown> & { pointer: number[]; pointer_global?: number[] };
const TRAJECTORY_KEYS = new Set(["pointer", "pointer_global", ...FIELDS.map(([raw]) => raw)]);

const RawQueryBlockSchema = z.looseObject({
  query_id: row.optional(),
  question_id: z.union([z.number().int(), z.string()]).optional(),
});
const RawRecordSchema = z.looseObject({
  query: RawQueryBlockSchema.optional(),
  pointer_candidates: z
    .array(z.unknown())
    .min(1, "holds no trajectories (a query without trajectories gives RL training nothing to compare)"),
  candidate_pool_ids: z.array(row).optional(),
});
type RawRecord = z.output<typeof RawRecordSchema>;
const RECORD_KEYS = new Set(["query", "pointer_candidates", "candidate_pool_ids"]);

/** `_meta` key naming the prompt order of a set that is not in Lever-Plus's own ("farthest"). */
const PROMPT_ORDER_KEY = "lever_prompt_order";

export interface RolloutImportOptions {
  file?: string;
  sha256?: string;
  /** Required ICDs per trajectory; by default the first trajectory's length, enforced file-wide. */
  shots?: number;
}

/** `_meta` verbatim, less our prompt-order key (read first: JSON key order puts `_meta` after the rows). */
function readMeta(raw: unknown, file: string): { meta?: Record<string, unknown>; promptOrder: PromptOrder } {
  if (raw === undefined) return { promptOrder: "farthest" };
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new LeverError("must be an object", { file, record: "_meta" });
  const { [PROMPT_ORDER_KEY]: order, ...rest } = raw as Record<string, unknown>;
  if (order === undefined) return { meta: rest, promptOrder: "farthest" };
  const parsed = PromptOrderSchema.safeParse(order);
  if (!parsed.success)
    throw new LeverError(`must be one of ${PROMPT_ORDERS.join(", ")}`, {
      file,
      record: "_meta",
      field: PROMPT_ORDER_KEY,
    });
  return { ...(Object.keys(rest).length > 0 ? { meta: rest } : {}), promptOrder: parsed.data };
}

/** What every step of an import shares. `shots` is fixed by the option or by the first trajectory read. */
interface ImportContext {
  file: string;
  index: DatasetIndex;
  promptOrder: PromptOrder;
  shots: number | undefined;
  shotsGiven: boolean;
}

/** One query record being read: its key (the query's row), its question id and where errors point. */
interface QueryContext {
  key: string;
  queryRow: number;
  queryId: string;
  at: (field: string) => Where;
}

/**
 * Lever-Plus RL data → RolloutSet: every record read and checked (values, rules between fields, the
 * query never among its own candidates), the first problem one LeverError naming file, record and field.
 */
export function importRollouts(
  json: unknown,
  index: DatasetIndex,
  options: RolloutImportOptions = {},
): ImportResult<RolloutSet> {
  const file = options.file ?? "<rl data>";
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new LeverError("RL data must be a JSON object keyed by query idx", { file });
  const { meta, promptOrder } = readMeta((json as Record<string, unknown>)._meta, file);
  const ctx: ImportContext = {
    file,
    index,
    promptOrder,
    shots: options.shots,
    shotsGiven: options.shots !== undefined,
  };
  const queries: RolloutSet["queries"] = {};
  const topExtra: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(json as Record<string, unknown>)) {
    if (key.startsWith("_")) {
      if (key !== "_meta") topExtra[key] = raw;
      continue;
    }
    const { queryId, query } = readQuery(ctx, key, raw);
    queries[queryId] = query;
  }
  const set: RolloutSet = {
    format: "lever.rollouts/1",
    dataset: index.name,
    promptOrder,
    queries,
    ...(meta !== undefined ? { meta } : {}),
    ...(Object.keys(topExtra).length > 0 ? { extra: topExtra } : {}),
    source: {
      format: "leverplus.rl_data",
      ...(options.file !== undefined ? { file: options.file } : {}),
      ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
      settings: { shots: ctx.shots },
    },
  };
  const validated = RolloutSetSchema.parse(set);
  checkRolloutSet(validated, file);
  return { set: validated, warnings: [] };
}

/** One record: its query block, pool and trajectories, with the producer's other fields kept. */
function readQuery(ctx: ImportContext, key: string, raw: unknown): { queryId: string; query: RolloutQuery } {
  const { file, index } = ctx;
  const queryRow = parseRowKey(key, file);
  const queryId = idOfRow(index, queryRow, { file, record: key, field: "(key)" });
  const record = parseOrThrow(RawRecordSchema, raw, { file, record: key });
  const q: QueryContext = { key, queryRow, queryId, at: (field) => ({ file, record: key, field }) };
  const info = readQueryBlock(ctx, q, record);
  const pool = readPool(ctx, q, record.candidate_pool_ids);
  const trajectories = record.pointer_candidates.map((rawTrajectory, t) =>
    readTrajectory(ctx, q, rawTrajectory, t, pool),
  );
  const extra = Object.fromEntries(Object.entries(record).filter(([k]) => !RECORD_KEYS.has(k)));
  return {
    queryId,
    query: {
      ...(pool !== undefined ? { pool: pool.ids } : {}),
      trajectories,
      ...(info !== undefined ? { info } : {}),
      ...(Object.keys(extra).length > 0 ? { extra } : {}),
    },
  };
}

/** The `query` block less its row index, which must be the record's key (and its question id the row's). */
function readQueryBlock(ctx: ImportContext, q: QueryContext, record: RawRecord): Record<string, unknown> | undefined {
  if (record.query === undefined) return undefined;
  const { query_id: blockRow, ...rest } = record.query;
  if (blockRow !== undefined && blockRow !== q.queryRow)
    throw new LeverError(`${blockRow} differs from the record key ${q.queryRow}`, q.at("query.query_id"));
  if (rest.question_id !== undefined && String(rest.question_id) !== q.queryId)
    throw new LeverError(
      `${rest.question_id} is not the question id of row ${q.queryRow} in dataset "${ctx.index.name}" (${q.queryId}): wrong dataset?`,
      q.at("query.question_id"),
    );
  return rest;
}

interface Pool {
  rows: number[];
  ids: string[];
}

/** `candidate_pool_ids`: rows of the dataset, none twice, never the query itself (the pool contract). */
function readPool(ctx: ImportContext, q: QueryContext, rows: number[] | undefined): Pool | undefined {
  if (rows === undefined) return undefined;
  const ids = rows.map((r, i) => idOfRow(ctx.index, r, q.at(`candidate_pool_ids[${i}]`)));
  const duplicate = findDuplicate(rows);
  if (duplicate !== undefined)
    throw new LeverError(
      `${rows[duplicate[1]]} appears twice (also at [${duplicate[0]}])`,
      q.at(`candidate_pool_ids[${duplicate[1]}]`),
    );
  const self = rows.indexOf(q.queryRow);
  if (self >= 0)
    throw new LeverError(
      `${q.queryRow} is the query itself: a query is never its own candidate (docs/architecture.md, "The pool contract")`,
      q.at(`candidate_pool_ids[${self}]`),
    );
  return { rows, ids };
}

/** One `pointer_candidates` entry → a Trajectory in selection order. */
function readTrajectory(
  ctx: ImportContext,
  q: QueryContext,
  raw: unknown,
  t: number,
  pool: Pool | undefined,
): Trajectory {
  const prefix = `pointer_candidates[${t}]`;
  const field = (name: string) => q.at(`${prefix}.${name}`);
  const tr = parseOrThrow(RawTrajectorySchema, raw, {
    file: ctx.file,
    record: q.key,
    fieldPrefix: prefix,
  }) as RawTrajectory;
  checkPointer(ctx, tr.pointer, field);
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(tr)) if (!TRAJECTORY_KEYS.has(k)) extra[k] = v;
  // A pool never holds the query (readPool), so only global pointers can name it.
  const resolved = pool !== undefined ? pointersIntoPool(tr, pool, field) : globalPointers(ctx, q, tr, extra, field);
  const trajectory: Record<string, unknown> = { selected: fromPromptOrder(resolved.promptIds, ctx.promptOrder) };
  if (resolved.positions !== undefined) trajectory.positions = fromPromptOrder(resolved.positions, ctx.promptOrder);
  for (const [rawField, name] of FIELDS) if (tr[rawField] !== undefined) trajectory[name] = tr[rawField];
  if (Object.keys(extra).length > 0) trajectory.extra = extra;
  const broken = brokenTrajectoryRule(trajectory as Trajectory, rawName);
  if (broken !== undefined) throw new LeverError(broken.message, field(rawName(broken.field)));
  return trajectory as Trajectory;
}

/** The file-wide shot length (from `--shots` or the first trajectory) and no ICD twice. */
function checkPointer(ctx: ImportContext, pointer: number[], field: (name: string) => Where): void {
  ctx.shots ??= pointer.length;
  if (pointer.length !== ctx.shots)
    throw new LeverError(
      `has ${pointer.length} ICDs but ${ctx.shotsGiven ? "--shots is" : "earlier trajectories have"} ${ctx.shots} (wrong shot length)`,
      field("pointer"),
    );
  const duplicate = findDuplicate(pointer);
  if (duplicate !== undefined)
    throw new LeverError(`${pointer[duplicate[1]]} appears twice`, field(`pointer[${duplicate[1]}]`));
}

interface Resolved {
  /** Question ids in prompt order. */
  promptIds: string[];
  /** Pool positions in prompt order, when the query has a pool. */
  positions?: number[];
}

/** k64: `pointer` holds positions into the pool; `pointer_global`, when present, must echo their rows. */
function pointersIntoPool(tr: RawTrajectory, pool: Pool, field: (name: string) => Where): Resolved {
  const { pointer } = tr;
  pointer.forEach((p, j) => {
    if (p < 0 || p >= pool.ids.length)
      throw new LeverError(`${p} is outside the pool of ${pool.ids.length}`, field(`pointer[${j}]`));
  });
  const rows = pointer.map((p) => pool.rows[p]);
  tr.pointer_global?.forEach((g, j) => {
    if (g !== rows[j])
      throw new LeverError(
        `${g} differs from candidate_pool_ids[pointer[${j}]] = ${rows[j]}`,
        field(`pointer_global[${j}]`),
      );
  });
  if (tr.pointer_global !== undefined && tr.pointer_global.length !== pointer.length)
    throw new LeverError(
      `has ${tr.pointer_global.length} entries for ${pointer.length} pointers`,
      field("pointer_global"),
    );
  return { promptIds: pointer.map((p) => pool.ids[p]), positions: pointer };
}

/** Without a pool, `pointer` holds dataset rows; `pointer_global` is then an unmodelled echo, kept verbatim. */
function globalPointers(
  ctx: ImportContext,
  q: QueryContext,
  tr: RawTrajectory,
  extra: Record<string, unknown>,
  field: (name: string) => Where,
): Resolved {
  const promptIds = tr.pointer.map((r, j) => idOfRow(ctx.index, r, field(`pointer[${j}]`)));
  const self = tr.pointer.indexOf(q.queryRow);
  if (self >= 0)
    throw new LeverError(
      `${q.queryRow} is the query itself: a query is never its own demonstration (RL training would learn from it)`,
      field(`pointer[${self}]`),
    );
  if (tr.pointer_global !== undefined) extra.pointer_global = tr.pointer_global;
  return { promptIds };
}

/**
 * The Lever-Plus JSON of a RolloutSet: `pointer` in prompt order; queries with a pool get the k64
 * shape (`candidate_pool_ids`, local `pointer`, `pointer_global`), others global `pointer` rows.
 */
export function exportRollouts(set: RolloutSet, index: DatasetIndex): Record<string, unknown> {
  if (set.dataset !== index.name)
    throw new LeverError(`rollout set belongs to dataset "${set.dataset}", not "${index.name}"`, { field: "dataset" });
  const file = "<export>";
  const out: Record<string, unknown> = {};
  if (set.promptOrder !== "farthest") out._meta = { ...set.meta, [PROMPT_ORDER_KEY]: set.promptOrder };
  else if (set.meta !== undefined) out._meta = set.meta;
  Object.assign(out, set.extra ?? {});
  for (const [queryId, query] of Object.entries(set.queries)) {
    const queryRow = rowOfId(index, queryId, { file, record: queryId, field: "(key)" });
    const poolRows = query.pool?.map((id, i) => rowOfId(index, id, { file, record: queryId, field: `pool[${i}]` }));
    const candidates = query.trajectories.map((trajectory, t) => {
      const promptIds = toPromptOrder(trajectory.selected, set.promptOrder);
      const rows = promptIds.map((id) => rowOfId(index, id, { file, record: queryId, field: `trajectories[${t}]` }));
      const raw: Record<string, unknown> = {};
      if (poolRows !== undefined && trajectory.positions !== undefined) {
        raw.pointer = toPromptOrder(trajectory.positions, set.promptOrder);
        raw.pointer_global = rows;
      } else raw.pointer = rows;
      const fields = trajectory as unknown as Record<string, unknown>;
      for (const [rawName, name] of FIELDS) if (fields[name] !== undefined) raw[rawName] = fields[name];
      return Object.assign(raw, trajectory.extra ?? {});
    });
    out[String(queryRow)] = {
      ...(query.info !== undefined ? { query: { query_id: queryRow, ...query.info } } : {}),
      pointer_candidates: candidates,
      ...(poolRows !== undefined ? { candidate_pool_ids: poolRows } : {}),
      ...(query.extra ?? {}),
    };
  }
  return out;
}
