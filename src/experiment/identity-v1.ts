/**
 * Identity scheme 1, FROZEN: stage and evaluation identities (and guard run names) as lever computed
 * them up to commit 9255aa3. It hashed each section as parsed, every default filled (the VLM section
 * with every backend's settings side by side), without its top-level operational fields — so giving a
 * new setting a default changed every identity. Scheme 2 (src/experiment/identity.ts) replaced it; this
 * one is kept for one purpose: finding the work of a workspace an earlier build made (src/experiment/
 * records.ts adopts its stage records; the evaluation and guard runs keep the names they have).
 *
 * A section's scheme-1 form is its settings restricted to the fields scheme 1 knew — BASELINE_V1
 * (src/experiment/identity-baseline.ts), a field missing from the settings filled with its default
 * there — and does not exist (null) when the settings set a field added since to other than its
 * default: no earlier build ran that stage. What the stage does (what it reads, GRPO's mode defaults)
 * comes from this build's stage table, so an identity matches an earlier record only where this build
 * would do what that one did. Do not change anything here that changes a value it computes:
 * test/experiment/plan.test.ts pins them.
 */
import type { z } from "zod";
import { inCanonicalForm, type SettingsNode } from "../util/canonical-settings.js";
import { hashValue } from "../util/hash.js";
import { objectShapeOf } from "../util/operational.js";
import { backendSettingsSchema, VLM_BACKENDS, type VlmSettings } from "../vlm/settings.js";
import { BASELINE_V1 } from "./identity-baseline.js";
import { EvalSectionSchema, type Experiment, ExperimentSchema, GuardSectionSchema } from "./schema.js";
import { STAGE_TABLE, type StageEntry, type StageName } from "./stages.js";

const short = (value: unknown) => hashValue(value).slice(0, 10);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The value scheme 1 filled for a field the settings lack: its default (an object's: its fields'), or undefined. */
function defaultsOf(node: SettingsNode): unknown {
  if (node.fields === undefined) return node.default;
  if (node.defaulted !== true) return undefined;
  return Object.fromEntries(
    Object.entries(node.fields).flatMap(([key, child]) => {
      const value = defaultsOf(child);
      return value === undefined ? [] : [[key, value]];
    }),
  );
}

/** `value` restricted to the fields of `node`, missing ones filled; null when it sets a field `node` lacks. */
function restricted(
  shape: Record<string, z.ZodType> | null,
  value: Record<string, unknown>,
  node: SettingsNode,
): Record<string, unknown> | null {
  const fields = node.fields ?? {};
  for (const [key, v] of Object.entries(value)) {
    const field = shape?.[key];
    if (!(key in fields) && (field === undefined ? v !== undefined : inCanonicalForm(field, v))) return null;
  }
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(fields)) {
    const v = value[key];
    if (v === undefined) {
      const filled = defaultsOf(child);
      if (filled !== undefined) out[key] = filled;
      continue;
    }
    const field = shape?.[key];
    if (child.fields === undefined || !isPlainObject(v)) out[key] = v;
    else {
      const inner = restricted(field !== undefined ? objectShapeOf(field) : null, v, child);
      if (inner === null) return null;
      out[key] = inner;
    }
  }
  return out;
}

/** Settings of a section as scheme 1 hashed them, or null (see the module comment). */
function v1Form(schema: z.ZodType, value: object, section: keyof typeof BASELINE_V1): Record<string, unknown> | null {
  return restricted(objectShapeOf(schema), value as Record<string, unknown>, BASELINE_V1[section]);
}

/** A section (a stage's with its dependent defaults filled, as scheme 1 hashed it). */
function sectionV1(e: Experiment, key: "vlm" | StageName): Record<string, unknown> | null {
  if (key === "vlm") return v1Form(ExperimentSchema.shape.vlm, vlmSeenByV1(e.vlm), "vlm");
  const { filled } = STAGE_TABLE[key] as StageEntry<StageName>;
  const section = e[key] as NonNullable<Experiment[StageName]>;
  // A stage scheme 1 did not know: no earlier build ran it.
  if (!(key in BASELINE_V1)) return null;
  return v1Form(
    ExperimentSchema.shape[key],
    (filled ? filled(section) : section) as object,
    key as keyof typeof BASELINE_V1,
  );
}

/**
 * The flat VLM settings without the settings another backend got since scheme 1: they cannot change
 * what this backend answers, so they do not keep its stages from being found (scheme 1 hashed every
 * backend's settings, but only those it knew).
 */
function vlmSeenByV1(vlm: VlmSettings): object {
  const known = BASELINE_V1.vlm.fields ?? {};
  const own = Object.keys(backendSettingsSchema(vlm.vlm).shape);
  const others = VLM_BACKENDS.flatMap((b) => (b === vlm.vlm ? [] : Object.keys(backendSettingsSchema(b).shape)));
  return Object.fromEntries(
    Object.entries(vlm).filter(([key]) => key in known || own.includes(key) || !others.includes(key)),
  );
}

/** A stage's scheme-1 identity, or null: its settings or one of its inputs' have none. */
export function stageIdV1(name: StageName, e: Experiment, deps: Record<string, string | null>): string | null {
  if (Object.values(deps).includes(null)) return null;
  const entry: StageEntry<StageName> = STAGE_TABLE[name];
  const own = sectionV1(e, name);
  if (own === null) return null;
  if (entry.reads.length === 0) return short({ stage: name, settings: own, deps });
  const section = e[name] as NonNullable<Experiment[StageName]>;
  const asks = entry.reads.includes("vlm") && entry.asksVlm?.(section) !== false;
  const vlm = asks ? sectionV1(e, "vlm") : null;
  if (asks && vlm === null) return null;
  const read = { vlm, embedding: e.embedding };
  return short({
    stage: name,
    settings: { [name]: own, ...Object.fromEntries(entry.reads.map((r) => [r, read[r]])) },
    deps,
  });
}

/** The evaluation's scheme-1 identity, or null. */
export function evalIdV1(e: Experiment, dataId: string | null): string | null {
  const { baselines: _b, ...evalSettings } = e.eval;
  const settings = v1Form(EvalSectionSchema, evalSettings, "eval");
  const vlm = sectionV1(e, "vlm");
  if (dataId === null || settings === null || vlm === null) return null;
  return short({
    eval: settings,
    pools: { sampler: e.pools.sampler, k: e.pools.k },
    vlm,
    data: dataId,
    embedding: e.embedding,
    vote: "rank",
  });
}

/** The hash naming a guard run under scheme 1 (`<name>-guard-<hash>`), or null. */
export function guardHashV1(
  e: Experiment,
  evalId: string | null,
  finalId: string | null,
  exclude: readonly string[],
): string | null {
  const guard = v1Form(GuardSectionSchema, e.guard, "guard");
  if (evalId === null || finalId === null || guard === null) return null;
  return short({ eval: evalId, final: finalId, guard, exclude });
}
