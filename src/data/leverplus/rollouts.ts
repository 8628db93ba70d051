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
 */
import { z } from "zod";
import { LeverError } from "../../util/errors.js";
import { parseOrThrow } from "../../util/validate.js";
import {
  checkRolloutSet,
  fromPromptOrder,
  PROMPT_ORDERS,
  type PromptOrder,
  PromptOrderSchema,
  type RolloutSet,
  RolloutSetSchema,
  type Trajectory,
  toPromptOrder,
} from "../trajectories.js";
import type { ImportResult } from "./beams.js";
import { type DatasetIndex, findDuplicate, idOfRow, parseRowKey, rowOfId } from "./common.js";

const num = z.number();
const row = z.number().int();
const optionalNullable = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/** Raw field ⇄ Trajectory property, in the order we write them. */
const FIELDS = [
  ["gen_method", "genMethod", z.string().optional()],
  ["beam_rank", "beamRank", optionalNullable(z.number().int().nonnegative())],
  ["beam_score", "beamScore", optionalNullable(num)],
  ["logprob_score", "logprobScore", optionalNullable(num)],
  ["sample_logprob", "sampleLogprob", optionalNullable(num)],
  ["temperature", "temperature", optionalNullable(num)],
  ["similarity_score", "similarityScore", optionalNullable(num)],
  ["vqa_raw_generation", "rawGeneration", optionalNullable(z.string())],
  ["vqa_pred_answer", "predAnswer", optionalNullable(z.string())],
  ["vqa_correct", "vqaCorrect", z.union([z.literal(0), z.literal(1)]).optional()],
  ["vqa_acc_score", "vqaAccScore", num.min(0).max(1).nullable()],
  ["vqa_gt_prob", "vqaGtProb", optionalNullable(num)],
  ["gt_logprob", "gtLogprob", optionalNullable(num.max(0))],
  ["vqa_rel_token_f1", "vqaRelTokenF1", optionalNullable(num)],
  ["vqa_rel_edit_sim", "vqaRelEditSim", optionalNullable(num)],
  ["vqa_rel_score", "vqaRelScore", optionalNullable(num)],
  ["vqa_eval_mode", "evalMode", optionalNullable(z.string())],
  ["eval_split_used", "evalSplitUsed", optionalNullable(z.string())],
  ["eval_failed", "evalFailed", z.boolean().optional()],
] as const;

const RawTrajectorySchema = z.looseObject({
  pointer: z.array(row).min(1, "must hold at least one ICD"),
  pointer_global: z.array(row).optional(),
  ...Object.fromEntries(FIELDS.map(([raw, , schema]) => [raw, schema])),
});
const TRAJECTORY_KEYS = new Set(["pointer", "pointer_global", ...FIELDS.map(([raw]) => raw)]);

const RawQueryBlockSchema = z.looseObject({
  query_id: row.optional(),
  question_id: z.union([z.number().int(), z.string()]).optional(),
});
const RawRecordSchema = z.looseObject({
  query: RawQueryBlockSchema.optional(),
  pointer_candidates: z.array(z.unknown()),
  candidate_pool_ids: z.array(row).optional(),
});
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

export function importRollouts(
  json: unknown,
  index: DatasetIndex,
  options: RolloutImportOptions = {},
): ImportResult<RolloutSet> {
  const file = options.file ?? "<rl data>";
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new LeverError("RL data must be a JSON object keyed by query idx", { file });
  let shots = options.shots;
  const queries: RolloutSet["queries"] = {};
  const topExtra: Record<string, unknown> = {};
  const { meta, promptOrder } = readMeta((json as Record<string, unknown>)._meta, file);
  const selfUse = { trajectories: 0, queries: [] as string[] };

  for (const [key, raw] of Object.entries(json as Record<string, unknown>)) {
    if (key.startsWith("_")) {
      if (key !== "_meta") topExtra[key] = raw;
      continue;
    }
    const queryRow = parseRowKey(key, file);
    const queryId = idOfRow(index, queryRow, { file, record: key, field: "(key)" });
    const record = parseOrThrow(RawRecordSchema, raw, { file, record: key });
    const at = (field: string) => ({ file, record: key, field });

    let info: Record<string, unknown> | undefined;
    if (record.query !== undefined) {
      const { query_id: blockRow, ...rest } = record.query;
      if (blockRow !== undefined && blockRow !== queryRow)
        throw new LeverError(`${blockRow} differs from the record key ${queryRow}`, at("query.query_id"));
      if (rest.question_id !== undefined && String(rest.question_id) !== queryId)
        throw new LeverError(
          `${rest.question_id} is not the question id of row ${queryRow} in dataset "${index.name}" (${queryId}): wrong dataset?`,
          at("query.question_id"),
        );
      info = rest;
    }

    const poolRows = record.candidate_pool_ids;
    const pool = poolRows?.map((r, i) => idOfRow(index, r, at(`candidate_pool_ids[${i}]`)));
    if (poolRows !== undefined) {
      const duplicate = findDuplicate(poolRows);
      if (duplicate !== undefined)
        throw new LeverError(
          `${poolRows[duplicate[1]]} appears twice (also at [${duplicate[0]}])`,
          at(`candidate_pool_ids[${duplicate[1]}]`),
        );
    }

    const trajectories: Trajectory[] = [];
    let usesSelf = false;
    record.pointer_candidates.forEach((rawTrajectory, t) => {
      const field = (name: string) => at(`pointer_candidates[${t}].${name}`);
      const tr = parseOrThrow(RawTrajectorySchema, rawTrajectory, {
        file,
        record: key,
        fieldPrefix: `pointer_candidates[${t}]`,
      }) as Record<string, unknown> & { pointer: number[]; pointer_global?: number[] };
      const pointer = tr.pointer;
      shots ??= pointer.length;
      if (pointer.length !== shots)
        throw new LeverError(
          `has ${pointer.length} ICDs but ${options.shots !== undefined ? "--shots is" : "earlier trajectories have"} ${shots} (wrong shot length)`,
          field("pointer"),
        );
      const duplicate = findDuplicate(pointer);
      if (duplicate !== undefined)
        throw new LeverError(`${pointer[duplicate[1]]} appears twice`, field(`pointer[${duplicate[1]}]`));

      const extra: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(tr)) if (!TRAJECTORY_KEYS.has(k)) extra[k] = v;
      let promptIds: string[];
      let positions: number[] | undefined;
      let rows: number[];
      if (pool !== undefined && poolRows !== undefined) {
        pointer.forEach((p, j) => {
          if (p < 0 || p >= pool.length)
            throw new LeverError(`${p} is outside the pool of ${pool.length}`, field(`pointer[${j}]`));
        });
        positions = pointer;
        rows = pointer.map((p) => poolRows[p]);
        promptIds = pointer.map((p) => pool[p]);
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
      } else {
        rows = pointer;
        promptIds = pointer.map((r, j) => idOfRow(index, r, field(`pointer[${j}]`)));
        // Without a pool, pointer_global is an unmodelled echo; keep it verbatim.
        if (tr.pointer_global !== undefined) extra.pointer_global = tr.pointer_global;
      }
      if (rows.includes(queryRow)) {
        selfUse.trajectories++;
        usesSelf = true;
      }
      const trajectory: Record<string, unknown> = { selected: fromPromptOrder(promptIds, promptOrder) };
      if (positions !== undefined) trajectory.positions = fromPromptOrder(positions, promptOrder);
      for (const [rawName, name] of FIELDS) if (tr[rawName] !== undefined) trajectory[name] = tr[rawName];
      if (Object.keys(extra).length > 0) trajectory.extra = extra;
      trajectories.push(trajectory as Trajectory);
    });
    if (usesSelf) selfUse.queries.push(key);

    const extra = Object.fromEntries(Object.entries(record).filter(([k]) => !RECORD_KEYS.has(k)));
    queries[queryId] = {
      ...(pool !== undefined ? { pool } : {}),
      trajectories,
      ...(info !== undefined ? { info } : {}),
      ...(Object.keys(extra).length > 0 ? { extra } : {}),
    };
  }

  const warnings: string[] = [];
  if (selfUse.trajectories > 0)
    warnings.push(
      `${file}: ${selfUse.trajectories} trajectories in ${selfUse.queries.length} queries use the query itself as a demonstration (first: record "${selfUse.queries[0]}")`,
    );
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
      settings: { shots },
    },
  };
  const validated = RolloutSetSchema.parse(set);
  checkRolloutSet(validated, file);
  return { set: validated, warnings };
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
