/**
 * Planning `lever run` (no work done): every variant's stages with their IDENTITY — a hash of what can
 * change the stage's result and of the identities of the stages it reads (src/experiment/identity.ts)
 * — and LABEL, the evaluation's identity, the distinct stages in execution order with the variants that
 * share them, and the dry-run's description. Variants that agree upstream share those stages (a β sweep
 * reuses one set of pools, beams, SFT and rollouts); a stage whose record exists is reused
 * (src/experiment/records.ts), under its identity or, from a workspace an earlier build made, under the
 * identity that build gave it (`legacyId`). Everything here derives from the stage table
 * (src/experiment/stages.ts). Identities name the stage records and evaluation runs of existing
 * workspaces: test/experiment/plan.test.ts pins them.
 */

import { RETRIEVERS } from "../icl/retriever-catalog.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { evalIdentities, evalRunNames, type Identities, stageIdentities } from "./identity.js";
import type { LoadedExperiment, Variant } from "./load.js";
import { readStageRecord, type StageRecordState } from "./records.js";
import type { Experiment } from "./schema.js";
import { STAGE_TABLE, STAGES, type StageEntry, type StageName, TRAINING_STAGES } from "./stages.js";

export interface PlannedStage {
  stage: StageName;
  id: string;
  /** Its identity under scheme 1 (src/experiment/identity-v1.ts): an earlier build's record of it is adopted; null: no earlier build planned it. */
  legacyId: string | null;
  /** Readable name of the stage's outputs in this variant: the stage plus the swept values that reach it ("grpo_beta-0.12_seed-2"). */
  label: string;
  /** The label without its swept seeds when a seed reaches the stage ("grpo_beta-0.12"): the seeds of one method, one row of the comparison. */
  seedGroup: string | null;
  /** The stages it reads, with their identities. */
  deps: Partial<Record<StageName, string>>;
}

export interface PlannedVariant {
  variant: Variant;
  stages: PlannedStage[];
  evalId: string;
  /** The evaluation's identity under scheme 1 (null: none): an earlier build's evaluation run keeps its name. */
  legacyEvalId: string | null;
}

export interface RunPlan {
  loaded: LoadedExperiment;
  variants: PlannedVariant[];
  /** Every distinct stage, in execution order, with the variants that use it. */
  unique: { stage: PlannedStage; variants: number[] }[];
}

/** The stages of one variant with their identities (no work done). */
export function planVariant(v: Variant): PlannedVariant {
  const e = v.experiment;
  const stages: PlannedStage[] = [];
  // Per planned stage: its identities, and the sections whose swept values reach it (its label's).
  const planned = new Map<StageName, { ids: Identities; sections: Set<string> }>();
  for (const name of STAGES) {
    if (e[name] === undefined) continue;
    const entry: StageEntry<StageName> = STAGE_TABLE[name];
    const inputs = inputsOf(name, entry, e);
    const ids = stageIdentities(name, e, Object.fromEntries(inputs.map((d) => [d, planned.get(d)?.ids])));
    const deps = Object.fromEntries(inputs.map((d) => [d, planned.get(d)?.ids.id]));
    const sections = new Set([name, ...entry.reads, ...inputs.flatMap((d) => [...(planned.get(d)?.sections ?? [])])]);
    planned.set(name, { ids, sections });
    stages.push({ stage: name, ...ids, ...labels(name, v.assignments, sections), deps });
  }
  const evalIds = evalIdentities(e, planned.get("data")?.ids as Identities);
  return { variant: v, stages, evalId: evalIds.id, legacyEvalId: evalIds.legacyId };
}

/** The stages it reads in this experiment; refuses one without a section it needs. */
function inputsOf(name: StageName, entry: StageEntry<StageName>, e: Experiment): StageName[] {
  const missing = entry.needs.find((d) => e[d] === undefined);
  if (missing !== undefined)
    throw new LeverError(`the ${name} section needs a ${missing} section${entry.why ? ` (${entry.why})` : ""}`, {
      field: name,
    });
  const start = entry.startsFrom?.find((d) => e[d] !== undefined);
  return [...entry.needs, ...(entry.uses ?? []).filter((d) => e[d] !== undefined), ...(start ? [start] : [])];
}

/** "grpo" plus the swept values of the sections that reach the stage ("grpo_beta-0.12_seed-2"). */
function labels(stage: StageName, assignments: Variant["assignments"], sections: Set<string>) {
  const parts = assignments
    .filter((a) => sections.has(a.path[0]))
    .map((a) => {
      const key = a.path[a.path.length - 1];
      return { seed: key === "seed", text: `${key}-${String(a.value)}`.replace(/[^A-Za-z0-9.-]+/g, "-") };
    });
  const label = [stage, ...parts.map((p) => p.text)].join("_");
  const seedless = [stage, ...parts.filter((p) => !p.seed).map((p) => p.text)].join("_");
  return { label, seedGroup: seedless === label ? null : seedless };
}

/**
 * The comparison's baseline must be one of the methods the run will evaluate — a baseline retriever, a
 * trained stage's label (`rce`, `selector:rce`, `grpo_beta-0.12_seed-1`) or a seed group by its name
 * (`grpo`) — so a typo is refused before any training, not after all of it: the names the comparison
 * resolves (src/report/workspace-methods.ts, `resolveMethod` and `chooseBaseline`); in a "RUN/RETRIEVER" reference,
 * RUN must name one of the experiment's evaluation runs (`<name>-eval-<id>`).
 */
function checkBaseline(loaded: LoadedExperiment, variants: readonly PlannedVariant[]): void {
  const e0 = loaded.variants[0].experiment;
  const given = e0.compare?.baseline;
  if (given === undefined) return;
  const field = { file: loaded.file, field: "compare.baseline" };
  // "RUN/RETRIEVER": RUN must be one of this experiment's evaluation runs, by name (its id is not known before it exists).
  const slash = given.indexOf("/");
  const ref = slash < 0 ? given : given.slice(slash + 1);
  if (slash >= 0) {
    // An earlier build's evaluation run keeps its name (src/experiment/identity.ts): that name is one too.
    const names = variants.map((pv) => evalRunNames(e0, { id: pv.evalId, legacyId: pv.legacyEvalId }));
    const runs = [...new Set(names.map(([now]) => now))];
    if (!names.flat().includes(given.slice(0, slash)))
      throw new LeverError(
        `"${given.slice(0, slash)}" is not an evaluation run of this experiment (RUN/RETRIEVER names one by its name: ${runs.join(", ")})`,
        field,
      );
  }
  const methods = new Set(variants.flatMap((pv) => pv.variant.experiment.eval.baselines));
  for (const pv of variants)
    for (const s of pv.stages)
      if (TRAINING_STAGES.includes(s.stage)) {
        methods.add(`${RETRIEVERS.selector.prefix}${s.label}`);
        // After RUN/ a method is a retriever: a bare label or a seed group is not one.
        if (slash < 0) methods.add(s.label);
        if (s.seedGroup !== null && slash < 0) methods.add(s.seedGroup);
      }
  if (!methods.has(ref))
    throw new LeverError(`no method "${ref}" will be evaluated (methods: ${[...methods].join(", ")})`, field);
}

export function plan(loaded: LoadedExperiment): RunPlan {
  const variants = loaded.variants.map(planVariant);
  checkBaseline(loaded, variants);
  const unique = new Map<string, { stage: PlannedStage; variants: number[] }>();
  for (const stageName of STAGES)
    variants.forEach((pv, i) => {
      const s = pv.stages.find((x) => x.stage === stageName);
      if (s === undefined) return;
      const key = `${s.stage}-${s.id}`;
      const entry = unique.get(key);
      if (entry) entry.variants.push(i);
      else unique.set(key, { stage: s, variants: [i] });
    });
  return { loaded, variants, unique: [...unique.values()] };
}

/** The dry-run (and `--json`) view of a plan: variants with their stage ids, every distinct stage with its state. */
export function describePlan(ws: Workspace, p: RunPlan) {
  return {
    file: p.loaded.file,
    variants: p.variants.map((v, i) => ({
      index: i + 1,
      label: v.variant.label || "(no sweep)",
      stages: Object.fromEntries(v.stages.map((s) => [s.stage, s.id])),
      eval: v.evalId,
    })),
    stages: p.unique.map(({ stage, variants }) => ({
      stage: stage.stage,
      id: stage.id,
      usedBy: variants.map((i) => i + 1),
      state: stageState(readStageRecord(ws, stage)),
    })),
  };
}

/** A stage's state in the dry-run: done, to run, or to run again and why. */
function stageState(record: StageRecordState): string {
  if (record === null) return "to run";
  return "outputs" in record ? "done" : `to run again (${record.redo})`;
}
