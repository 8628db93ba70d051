/**
 * Lever-Plus beam-search data (`generate_data.py` output, docs/provenance.md#beam-data) ⇄ BeamSet.
 *
 * `{"<anchor idx>": {"beams": [{"shots": [{"id", "score"}…], "final_score", "full_sequence"}…],
 *   "few_shot_num", "id_list": [[icd…, anchor]…], "score_list": […], "shot_scores": [[…]…]}}`
 * `id_list[b]` lists ICDs in PROMPT order (leftmost first) followed by the anchor. With
 * construct_order "left" (the default and only value used) every new ICD is inserted at the left,
 * so the first selected ICD sits next to the query: selected = reverse(id_list[b] minus the anchor),
 * prompt order "nearest". `beams[b].shots` and `shot_scores[b]` are in selection order.
 */
import { z } from "zod";
import { LeverError } from "../../util/errors.js";
import { parseOrThrow } from "../../util/validate.js";
import type { Beam, BeamSet, PromptOrder } from "../trajectories.js";
import { BeamSetSchema, fromPromptOrder, toPromptOrder } from "../trajectories.js";
import { type DatasetIndex, findDuplicate, idOfRow, parseRowKey, rowOfId } from "./common.js";

export type ConstructOrder = "left" | "right";

const num = z.number();
const row = z.number().int();

const RawShotSchema = z.strictObject({ id: row, score: num });
const RawBeamBlockSchema = z.strictObject({
  shots: z.array(RawShotSchema),
  final_score: num,
  full_sequence: z.array(row),
});
const RawBeamRecordSchema = z.looseObject({
  beams: z.array(RawBeamBlockSchema).optional(),
  few_shot_num: z.number().int().positive().optional(),
  id_list: z.array(z.array(row).min(2, "must hold at least one ICD and the anchor")),
  score_list: z.array(num),
  shot_scores: z.array(z.array(num)).optional(),
});
const KNOWN_KEYS = new Set(["beams", "few_shot_num", "id_list", "score_list", "shot_scores"]);

/** One record of a Lever-Plus beam file, as exported. */
export interface LeverPlusBeamRecord {
  beams?: { shots: { id: number; score: number }[]; final_score: number; full_sequence: number[] }[];
  few_shot_num?: number;
  id_list: number[][];
  score_list: number[];
  shot_scores?: number[][];
  [extra: string]: unknown;
}

export interface BeamImportOptions {
  /** Shown in error messages and recorded as the source. */
  file?: string;
  sha256?: string;
  /** Generation setting `construct_order` (default "left"). */
  constructOrder?: ConstructOrder;
}

export interface ImportResult<T> {
  set: T;
  /** Things that are legal but suspicious (none today: an anchor among its own demonstrations is refused). */
  warnings: string[];
}

export function promptOrderOfConstruct(order: ConstructOrder): PromptOrder {
  return order === "left" ? "nearest" : "farthest";
}

/** Reads `construct_order:left|right` from a Lever-Plus beam file name, if present. */
export function constructOrderFromFileName(name: string): ConstructOrder | undefined {
  const match = /construct_order:(left|right)/.exec(name);
  return match === null ? undefined : (match[1] as ConstructOrder);
}

export function importBeams(
  json: unknown,
  index: DatasetIndex,
  options: BeamImportOptions = {},
): ImportResult<BeamSet> {
  const file = options.file ?? "<beam data>";
  const constructOrder = options.constructOrder ?? "left";
  const promptOrder = promptOrderOfConstruct(constructOrder);
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new LeverError("beam data must be a JSON object keyed by anchor idx", { file });
  const context: BeamImport = { file, index, constructOrder, promptOrder, warnings: [], shots: undefined };
  const queries: BeamSet["queries"] = {};
  for (const [key, raw] of Object.entries(json as Record<string, unknown>)) {
    const anchor = parseRowKey(key, file);
    const queryId = idOfRow(index, anchor, { file, record: key, field: "(key)" });
    queries[queryId] = importRecord(context, key, anchor, raw);
  }
  const set: BeamSet = {
    format: "lever.beams/1",
    dataset: index.name,
    promptOrder,
    queries,
    source: {
      format: "leverplus.beams",
      ...(options.file !== undefined ? { file: options.file } : {}),
      ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
      settings: { constructOrder },
    },
  };
  return { set: BeamSetSchema.parse(set), warnings: context.warnings };
}

/** What importing reads and gathers across records: every beam of the file has `shots` ICDs. */
interface BeamImport {
  file: string;
  index: DatasetIndex;
  constructOrder: ConstructOrder;
  promptOrder: PromptOrder;
  warnings: string[];
  /** The ICDs per beam, set by the file's first beam. */
  shots: number | undefined;
}

type RawBeamRecord = z.output<typeof RawBeamRecordSchema>;

/** One anchor's record: its beams in file order, few_shot_num and unknown keys (kept as `extra`). */
function importRecord(context: BeamImport, key: string, anchor: number, raw: unknown): BeamSet["queries"][string] {
  const { file } = context;
  const record = parseOrThrow(RawBeamRecordSchema, raw, { file, record: key });
  const at = (field: string) => ({ file, record: key, field });
  const n = record.id_list.length;
  if (record.score_list.length !== n)
    throw new LeverError(`has ${record.score_list.length} scores for ${n} beams in id_list`, at("score_list"));
  if (record.shot_scores !== undefined && record.shot_scores.length !== n)
    throw new LeverError(`has ${record.shot_scores.length} entries for ${n} beams in id_list`, at("shot_scores"));
  if (record.beams !== undefined && record.beams.length !== n)
    throw new LeverError(`has ${record.beams.length} entries for ${n} beams in id_list`, at("beams"));
  const beams: Beam[] = [];
  for (let b = 0; b < n; b++) beams.push(importBeam(context, record, b, key, anchor));
  const extra = Object.fromEntries(Object.entries(record).filter(([k]) => !KNOWN_KEYS.has(k)));
  return {
    beams,
    ...(record.few_shot_num !== undefined ? { fewShotNum: record.few_shot_num } : {}),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}

/**
 * Beam `b` of a record: id_list[b] ends with the anchor and holds the file's number of distinct ICDs,
 * read into selection order; its shot scores from shot_scores[b], else from the `beams` block, which
 * must agree with id_list, score_list and shot_scores.
 */
function importBeam(context: BeamImport, record: RawBeamRecord, b: number, key: string, anchor: number): Beam {
  const { file, index, promptOrder } = context;
  const at = (field: string) => ({ file, record: key, field });
  const sequence = record.id_list[b];
  const last = sequence[sequence.length - 1];
  if (last !== anchor)
    throw new LeverError(
      `ends with ${last}, but the last entry must be the anchor ${anchor}`,
      at(`id_list[${b}][${sequence.length - 1}]`),
    );
  const promptRows = sequence.slice(0, -1);
  context.shots ??= promptRows.length;
  const shots = context.shots;
  if (promptRows.length !== shots)
    throw new LeverError(
      `has ${promptRows.length} ICDs but earlier beams have ${shots} (wrong shot length)`,
      at(`id_list[${b}]`),
    );
  const promptIds = promptRows.map((r, i) => idOfRow(index, r, at(`id_list[${b}][${i}]`)));
  const duplicate = findDuplicate(promptRows);
  if (duplicate !== undefined)
    throw new LeverError(`ICD ${promptRows[duplicate[1]]} appears twice`, at(`id_list[${b}][${duplicate[1]}]`));
  const own = promptRows.indexOf(anchor);
  if (own >= 0)
    throw new LeverError(
      `${anchor} is the anchor itself: a query is never its own demonstration (SFT would learn from it)`,
      at(`id_list[${b}][${own}]`),
    );
  const selected = fromPromptOrder(promptIds, promptOrder);
  const selectedRows = fromPromptOrder(promptRows, promptOrder);

  let shotScores = record.shot_scores?.[b];
  if (shotScores !== undefined && shotScores.length !== shots)
    throw new LeverError(`has ${shotScores.length} scores for ${shots} ICDs`, at(`shot_scores[${b}]`));
  const block = record.beams?.[b];
  if (block !== undefined) {
    checkBlock(context, record, b, selectedRows, at);
    shotScores ??= block.shots.map((s) => s.score);
  }
  return { selected, score: record.score_list[b], ...(shotScores !== undefined ? { shotScores } : {}) };
}

/** The `beams[b]` block repeats id_list[b] (in selection order), score_list[b] and shot_scores[b]: they must agree. */
function checkBlock(
  context: BeamImport,
  record: RawBeamRecord,
  b: number,
  selectedRows: readonly number[],
  at: (field: string) => { file: string; record: string; field: string },
): void {
  const { constructOrder } = context;
  const block = record.beams![b];
  const blockRows = block.shots.map((s) => s.id);
  if (blockRows.join() !== selectedRows.join())
    throw new LeverError(
      `lists ICDs [${blockRows.join(", ")}] in selection order, but id_list[${b}] read with construct_order "${constructOrder}" gives [${selectedRows.join(", ")}]` +
        (blockRows.join() === [...selectedRows].reverse().join()
          ? ` (is construct_order "${constructOrder === "left" ? "right" : "left"}"?)`
          : ""),
      at(`beams[${b}].shots`),
    );
  if (block.full_sequence.join() !== record.id_list[b].join())
    throw new LeverError(`differs from id_list[${b}]`, at(`beams[${b}].full_sequence`));
  if (block.final_score !== record.score_list[b])
    throw new LeverError(
      `${block.final_score} differs from score_list[${b}] = ${record.score_list[b]}`,
      at(`beams[${b}].final_score`),
    );
  const blockScores = block.shots.map((s) => s.score);
  const shotScores = record.shot_scores?.[b];
  if (shotScores !== undefined && blockScores.join() !== shotScores.join())
    throw new LeverError(`scores differ from shot_scores[${b}]`, at(`beams[${b}].shots`));
}

/**
 * The Lever-Plus JSON of a BeamSet. `beams` and `shot_scores` are written when every beam of the
 * query has per-shot scores; `few_shot_num` when recorded.
 */
export function exportBeams(set: BeamSet, index: DatasetIndex): Record<string, LeverPlusBeamRecord> {
  if (set.dataset !== index.name)
    throw new LeverError(`beam set belongs to dataset "${set.dataset}", not "${index.name}"`, { field: "dataset" });
  const file = "<export>";
  const out: Record<string, LeverPlusBeamRecord> = {};
  for (const [queryId, query] of Object.entries(set.queries)) {
    const anchor = rowOfId(index, queryId, { file, record: queryId, field: "(key)" });
    const rowsOf = (ids: readonly string[], b: number) =>
      ids.map((id) => rowOfId(index, id, { file, record: queryId, field: `beams[${b}].selected` }));
    const idList = query.beams.map((beam, b) => [...rowsOf(toPromptOrder(beam.selected, set.promptOrder), b), anchor]);
    const withScores = query.beams.every((beam) => beam.shotScores !== undefined);
    const record: LeverPlusBeamRecord = {
      ...(withScores
        ? {
            beams: query.beams.map((beam, b) => ({
              shots: rowsOf(beam.selected, b).map((id, i) => ({ id, score: beam.shotScores![i] })),
              final_score: beam.score,
              full_sequence: idList[b],
            })),
          }
        : {}),
      ...(query.fewShotNum !== undefined ? { few_shot_num: query.fewShotNum } : {}),
      id_list: idList,
      score_list: query.beams.map((beam) => beam.score),
      ...(withScores ? { shot_scores: query.beams.map((beam) => [...beam.shotScores!]) } : {}),
      ...(query.extra ?? {}),
    };
    out[String(anchor)] = record;
  }
  return out;
}
