/**
 * Validation with zod that ends in one `LeverError`: the first issue, located by file, record and
 * field. Many artefacts are keyed by question id under one property (`queries`, `pools`, …);
 * `recordsAt` names it, so an issue at `queries.123.beams[0].score` reads record "123", field
 * "beams[0].score".
 */
import type { z } from "zod";
import { LeverError } from "./errors.js";

export interface ParseLocation {
  file?: string;
  /** The record the value is (when the whole value is one record). */
  record?: string | number;
  /** Top-level key whose children are records keyed by id. */
  recordsAt?: string;
  /** Prefix for the field path (e.g. the key the value was found under). */
  fieldPrefix?: string;
}

/** `["a", 0, "b"]` → `a[0].b`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

/** The LeverError for the first issue of a failed parse. */
export function zodIssueError(error: z.ZodError, where: ParseLocation = {}): LeverError {
  const issue = error.issues[0];
  const path = issue.path;
  const inRecord = where.recordsAt !== undefined && path[0] === where.recordsAt && path.length > 1;
  const rest = inRecord ? path.slice(2) : path;
  const fieldPath = [...(where.fieldPrefix !== undefined ? [where.fieldPrefix] : []), ...rest];
  const field = formatPath(fieldPath);
  const record = inRecord ? String(path[1]) : where.record;
  return new LeverError(issue.message, {
    ...(where.file !== undefined ? { file: where.file } : {}),
    ...(record !== undefined ? { record } : {}),
    ...(field.length > 0 ? { field } : {}),
  });
}

/** Parses `value` with `schema` or throws the first issue as a located LeverError. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where: ParseLocation = {}): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodIssueError(parsed.error, where);
  return parsed.data;
}
