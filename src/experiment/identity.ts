/**
 * Identities (scheme 2): what names a `lever run` stage's record and outputs (`<stage>-<id>`, its
 * artefacts `x<id>`), the evaluation's run (`<name>-eval-<id>`) and a guard's (`<name>-guard-<hash>`).
 * An identity hashes what can change the result, and nothing else:
 *
 * - a stage: its section in canonical form (src/util/canonical-settings.ts: operational settings left
 *   out at every depth, and every setting at its default in the frozen baseline,
 *   src/experiment/identity-baseline.ts), the sections it reads — the VLM as the chosen backend's own
 *   settings tagged with its name (src/vlm/settings.ts, `backendSettings`), none when the stage does
 *   not ask it; the embedding — and the identities of the stages it reads;
 * - the evaluation: its settings but the baselines and the summary's (resamples, clusterByImage: the
 *   summary is recomputed from the stored predictions at every run, and the evaluation run's own
 *   identity leaves them out too), the pools' sampler and K, the VLM, the data stage, the embedding,
 *   and what its `vote` rows mean;
 * - a guard run: the evaluation's identity, the final stage's, the guard's settings, the questions
 *   left out.
 *
 * So an unset setting and its explicit default give one identity; a setting added with a default, to
 * any section or backend, changes none; a simulator stage carries no setting of the OpenAI client; a
 * default changed later changes the identities it enters, as it changes their results.
 *
 * UPGRADES. Builds up to 9255aa3 wrote scheme 1 (src/experiment/identity-v1.ts, kept frozen). Every
 * identity is computed under both: a stage whose record is not found under its identity is looked up
 * under its scheme-1 identity and, when found, adopted — its record written again under the new one
 * (src/experiment/records.ts), the old left for the old build — and an evaluation or guard run keeps
 * the name it has. So a workspace an earlier build made is reused in full; nothing is redone because
 * the way identities are written changed. (Rewriting the old records instead would strand the build
 * that made them, and tie this build to every record's format.)
 */
import type { Workspace } from "../store/workspace.js";
import { canonicalSettings } from "../util/canonical-settings.js";
import { hashValue } from "../util/hash.js";
import { backendSettings, backendSettingsSchema, type VlmSettings } from "../vlm/settings.js";
import { IDENTITY_BASELINE } from "./identity-baseline.js";
import { evalIdV1, guardHashV1, stageIdV1 } from "./identity-v1.js";
import { EvalSectionSchema, type Experiment, ExperimentSchema, GuardSectionSchema } from "./schema.js";
import { STAGE_TABLE, type StageEntry, type StageName } from "./stages.js";

/** The scheme identities are written in now. */
const SCHEME = 2;

const short = (value: unknown) => hashValue(value).slice(0, 10);

/** An identity now and under scheme 1 (null: no earlier build planned it). */
export interface Identities {
  id: string;
  legacyId: string | null;
}

/** The VLM as identities hold it: the chosen backend's own settings in canonical form, tagged with its name. */
export function vlmIdentity(vlm: VlmSettings): { backend: string; settings: Record<string, unknown> } {
  const { vlm: backend, ...own } = backendSettings(vlm);
  return { backend, settings: canonicalSettings(backendSettingsSchema(backend), own, IDENTITY_BASELINE.vlm) };
}

/** A stage's section in canonical form, with the defaults that depend on its other settings filled. */
function stageSection(e: Experiment, name: StageName): Record<string, unknown> {
  const { filled } = STAGE_TABLE[name] as StageEntry<StageName>;
  const section = e[name] as NonNullable<Experiment[StageName]>;
  return canonicalSettings(
    ExperimentSchema.shape[name],
    (filled ? filled(section) : section) as object,
    IDENTITY_BASELINE[name],
  );
}

/** What of the experiment enters a stage's identity (besides its inputs' identities). */
function stageSettings(name: StageName, e: Experiment): unknown {
  const entry: StageEntry<StageName> = STAGE_TABLE[name];
  const own = stageSection(e, name);
  if (entry.reads.length === 0) return own;
  const section = e[name] as NonNullable<Experiment[StageName]>;
  const read = {
    vlm: entry.asksVlm?.(section) === false ? null : vlmIdentity(e.vlm),
    embedding: e.embedding,
  };
  return { [name]: own, ...Object.fromEntries(entry.reads.map((r) => [r, read[r]])) };
}

/** A stage's identities, from its inputs' (by stage). */
export function stageIdentities(
  name: StageName,
  e: Experiment,
  inputs: Partial<Record<StageName, Identities>>,
): Identities {
  const deps = Object.fromEntries(Object.entries(inputs).map(([stage, ids]) => [stage, ids?.id]));
  const legacyDeps = Object.fromEntries(Object.entries(inputs).map(([stage, ids]) => [stage, ids?.legacyId ?? null]));
  return {
    id: short({ identity: SCHEME, stage: name, settings: stageSettings(name, e), deps }),
    legacyId: stageIdV1(name, e, legacyDeps),
  };
}

/** The evaluation's identities, from the data stage's. */
export function evalIdentities(e: Experiment, data: Identities): Identities {
  const { baselines: _b, resamples: _r, clusterByImage: _c, ...settings } = e.eval;
  const id = short({
    identity: SCHEME,
    eval: canonicalSettings(EvalSectionSchema, settings, IDENTITY_BASELINE.eval),
    pools: { sampler: e.pools.sampler, k: e.pools.k },
    vlm: vlmIdentity(e.vlm),
    data: data.id,
    embedding: e.embedding,
    // What the evaluation's `vote` rows mean (issue 23: rank weights at a calibrated scale).
    vote: "rank",
  });
  return { id, legacyId: evalIdV1(e, data.legacyId) };
}

/**
 * The name of a run `lever run` names itself: the first of `names` (now, then under scheme 1) that a run
 * of this kind has in the workspace — an earlier build's run keeps its name — else the first.
 */
export function runName(ws: Workspace, kind: string, names: readonly (string | null)[]): string {
  const taken = new Set(ws.listRuns({ kind }).map((run) => run.name));
  return names.find((name): name is string => name !== null && taken.has(name)) ?? (names[0] as string);
}

/** The names of the evaluation's run, now and under scheme 1. */
export function evalRunNames(e: Experiment, evalIds: Identities): [string, string | null] {
  const name = (id: string | null) => (id === null ? null : `${e.name}-eval-${id}`);
  return [name(evalIds.id) as string, name(evalIds.legacyId)];
}

/** The names of a guard run (what it asks: the evaluation, the final stage, the guard's settings, the questions left out). */
export function guardRunNames(
  e: Experiment,
  evalIds: Identities,
  final: Identities,
  exclude: ReadonlySet<string>,
): [string, string | null] {
  const left = [...exclude].sort();
  const hash = hashValue({
    identity: SCHEME,
    eval: evalIds.id,
    final: final.id,
    guard: canonicalSettings(GuardSectionSchema, e.guard, IDENTITY_BASELINE.guard),
    exclude: left,
  }).slice(0, 10);
  const legacy = guardHashV1(e, evalIds.legacyId, final.legacyId, left);
  return [`${e.name}-guard-${hash}`, legacy === null ? null : `${e.name}-guard-${legacy}`];
}
