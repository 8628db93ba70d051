/**
 * Operational settings: fields that change how fast, where or how robustly a result is computed,
 * never the result itself (replica URLs, timeouts, retries, back-off, concurrency, batch sizes,
 * caches). A settings schema marks each one ONCE, where the field is declared, with
 * `.meta(OPERATIONAL)`; every identity that hashes settings — a `lever run` stage's, the evaluation's,
 * the OpenAI client's model id — leaves the marked fields out with `withoutOperational`. So adding
 * replicas or raising concurrency after a crash resumes the same work and reuses the same cache.
 *
 * The mark is found through the wrappers a field gets from `.optional()`, `.default()`,
 * `.prefault()`, `.nullable()`, `.partial()` and pipes, and in an object schema behind the same
 * wrappers (an experiment section is an `.optional()` object).
 */
import type { z } from "zod";

export const OPERATIONAL = { operational: true } as const;

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}

const defOf = (schema: z.ZodType) => schema._zod.def as unknown as Def;

/** The schema a wrapper wraps (optional, default, pipe, …), or null. */
function unwrapped(schema: z.ZodType): z.ZodType | null {
  const def = defOf(schema);
  return def.innerType ?? (def.type === "pipe" ? (def.in ?? null) : null);
}

/** True when the field, or a schema it wraps, carries the operational mark. */
export function isOperational(field: z.ZodType): boolean {
  for (let s: z.ZodType | null = field; s !== null; s = unwrapped(s)) if (s.meta()?.operational === true) return true;
  return false;
}

/** The fields of an object schema behind its wrappers (optional, default, pipe, …), or null for any other schema. */
export function objectShapeOf(schema: z.ZodType): Record<string, z.ZodType> | null {
  let s: z.ZodType | null = schema;
  while (s !== null && defOf(s).type !== "object") s = unwrapped(s);
  return s === null ? null : (defOf(s).shape ?? {});
}

/** The keys of an object schema (behind wrappers) whose fields are operational. */
export function operationalKeys(schema: z.ZodType): string[] {
  const shape = objectShapeOf(schema);
  if (shape === null) throw new Error("operationalKeys: not an object schema");
  return Object.entries(shape)
    .filter(([, field]) => isOperational(field))
    .map(([key]) => key);
}

/** `value` (an object the schema parsed) without its operational fields. */
export function withoutOperational<T extends object>(schema: z.ZodType, value: T): Partial<T> {
  const skip = new Set(operationalKeys(schema));
  return Object.fromEntries(Object.entries(value).filter(([key]) => !skip.has(key))) as Partial<T>;
}
