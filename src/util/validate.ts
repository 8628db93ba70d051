/**
 * Validation with zod that ends in one `LeverError`: the first issue, located by file, record and
 * field. Many artefacts are keyed by question id under one property (`queries`, `pools`, …);
 * `recordsAt` names it, so an issue at `queries.123.beams[0].score` reads record "123", field
 * "beams[0].score" (`recordsAt: true` when the value itself is the array or map of records).
 * `recordLabel` names array records by one of their fields instead, as the official VQA files
 * are: record "question_id 7" (or "#3", the index, when the record lacks it).
 */
import type { z } from "zod";
import { LeverError } from "./errors.js";

export interface ParseLocation {
  file?: string;
  /** The record the value is (when the whole value is one record). */
  record?: string | number;
  /** Top-level key whose children are records keyed by id (or index); true: the value's own children. */
  recordsAt?: string | true;
  /** Name records by this field of theirs (e.g. "question_id"), falling back to "#<index>". */
  recordLabel?: string;
  /** Prefix for the field path (e.g. the key the value was found under). */
  fieldPrefix?: string;
}

/** `["a", 0, "b"]` → `a[0].b`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

/** The LeverError for the first issue of a failed parse of `value`. */
export function zodIssueError(error: z.ZodError, where: ParseLocation = {}, value?: unknown): LeverError {
  const issue = error.issues[0];
  const path = issue.path;
  const depth = where.recordsAt === true ? 0 : 1;
  const inRecord =
    where.recordsAt !== undefined && (where.recordsAt === true || path[0] === where.recordsAt) && path.length > depth;
  const rest = inRecord ? path.slice(depth + 1) : path;
  const fieldPath = [...(where.fieldPrefix !== undefined ? [where.fieldPrefix] : []), ...rest];
  const field = formatPath(fieldPath);
  const record = inRecord ? recordName(value, path.slice(0, depth + 1), where.recordLabel) : where.record;
  return new LeverError(issueMessage(issue), {
    ...(where.file !== undefined ? { file: where.file } : {}),
    ...(record !== undefined ? { record } : {}),
    ...(field.length > 0 ? { field } : {}),
  });
}

/** zod's message, said the way a user fixing a file needs it (what is missing, NaN, which keys are extra). */
function issueMessage(issue: z.core.$ZodIssue): string {
  const expected = /^Invalid input: expected (\w+), received undefined$/.exec(issue.message);
  if (issue.code === "invalid_type" && expected !== null) return `is required but missing (expected ${expected[1]})`;
  if (issue.code === "invalid_type" && /received NaN$/.test(issue.message)) return "is NaN (a number is required)";
  if (issue.code === "unrecognized_keys") return `unexpected field(s): ${issue.keys.join(", ")}`;
  return issue.message;
}

/** The record at `path` inside `value`, by its label field when asked (and present), else by its key. */
function recordName(value: unknown, path: readonly PropertyKey[], label: string | undefined): string {
  const key = path[path.length - 1];
  if (label === undefined) return String(key);
  let record: unknown = value;
  for (const part of path) record = (record as Record<PropertyKey, unknown> | null | undefined)?.[part];
  const id = (record as Record<string, unknown> | null | undefined)?.[label];
  return typeof id === "number" || typeof id === "string" ? `${label} ${id}` : `#${String(key)}`;
}

/** Parses `value` with `schema` or throws the first issue as a located LeverError. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where: ParseLocation = {}): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodIssueError(parsed.error, where, value);
  return parsed.data;
}

/**
 * Parses command options given as CLI-shaped keys (`poolSampler`): the first problem becomes one
 * `LeverError` naming the flag (`--pool-sampler`).
 */
export function parseFlags<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const flag = `--${String(issue.path[0] ?? "options").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  throw new LeverError(issue.message, { field: flag });
}
