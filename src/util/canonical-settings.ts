/**
 * Canonical settings: the form in which settings enter an identity (a `lever run` stage's, the
 * evaluation's: src/experiment/identity.ts), so that the identity changes when a result can and only
 * then. Of an object its schema parsed (defaults filled), the canonical form keeps, at every depth:
 *
 * - no operational field (src/util/operational.ts: timeouts, concurrency, replicas, …);
 * - no field at its BASELINE, so an unset field and its explicit default are the same, and a field
 *   added later with a default is absent until someone sets it — adding a setting changes no identity.
 *   A field's baseline is its default as a frozen tree records it (`SettingsNode`: the tree of the
 *   defaults identities are relative to, src/experiment/identity-baseline.ts) when the tree has the
 *   field, else its schema's default now. So a default changed after it was frozen is not the baseline:
 *   the field then enters the identity, which changes, as the result does;
 * - no object field whose canonical form is empty while leaving it unset gives that object (a section
 *   with `.default()` / `.prefault()`); an optional object without a default stays even when empty,
 *   since `{}` (present, all defaults) and absent (off) differ;
 * - keys sorted (and `undefined` left out) by `canonicalJson` when hashed.
 *
 * Arrays, records, tuples and unions are compared whole (no setting of this code base nests an object
 * with defaults inside one; one that did would enter identities whole).
 */
import type { z } from "zod";
import { canonicalJson } from "./hash.js";
import { isOperational, objectShapeOf } from "./operational.js";

/** A schema's defaults as a tree: an object's fields, or a leaf's default (no `default` key: none). */
export interface SettingsNode {
  /** A leaf's default, when it has one (`"default" in node`). */
  default?: unknown;
  /** An object's fields. */
  fields?: Record<string, SettingsNode>;
  /** An object that leaving the field unset fills (a `.default()` or `.prefault()`). */
  defaulted?: true;
}

/** The defaults tree of a schema as it is now (fields behind optional, default and pipe wrappers). */
export function settingsNode(schema: z.ZodType): SettingsNode {
  const unset = schema.safeParse(undefined);
  const filled = unset.success && unset.data !== undefined;
  const shape = objectShapeOf(schema);
  if (shape !== null)
    return {
      fields: Object.fromEntries(Object.entries(shape).map(([key, field]) => [key, settingsNode(field)])),
      ...(filled ? { defaulted: true as const } : {}),
    };
  return filled ? { default: unset.data } : {};
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) && !ArrayBuffer.isView(value);

/** The canonical form of `value` (an object `schema` parsed), relative to the frozen `baseline` where it has a field. */
export function canonicalSettings(schema: z.ZodType, value: object, baseline?: SettingsNode): Record<string, unknown> {
  return canonicalObject(objectShapeOf(schema) ?? {}, value as Record<string, unknown>, baseline);
}

function canonicalObject(
  shape: Record<string, z.ZodType>,
  value: Record<string, unknown>,
  baseline: SettingsNode | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = value[key];
    const field = shape[key] as z.ZodType | undefined;
    if (v === undefined || (field !== undefined && isOperational(field))) continue;
    const node = baseline?.fields?.[key] ?? (field !== undefined ? settingsNode(field) : undefined);
    const inner = field !== undefined ? objectShapeOf(field) : null;
    const canonical = inner !== null && isPlainObject(v) ? canonicalObject(inner, v, node) : v;
    if (node === undefined || !atBaseline(node, canonical)) out[key] = canonical;
  }
  return out;
}

/** Whether a field's value enters the canonical form (not undefined, not operational, not at its schema's default now). */
export function inCanonicalForm(field: z.ZodType, value: unknown): boolean {
  return Object.keys(canonicalObject({ field }, { field: value }, undefined)).length > 0;
}

/** Whether a field's canonical value says nothing its absence does not. */
function atBaseline(node: SettingsNode, canonical: unknown): boolean {
  if (node.fields !== undefined)
    return node.defaulted === true && isPlainObject(canonical) && Object.keys(canonical).length === 0;
  return "default" in node && canonicalJson(canonical) === canonicalJson(node.default);
}
