/**
 * Methods from the workspace: every retriever of every named evaluation run is a method with id
 * "RUN/RETRIEVER" and a readable label; methods are referred to (baseline, seed groups) by id, label,
 * run name + retriever, or a retriever name that only one run has. The runs must have evaluated the
 * same query dataset (same items), since a paired comparison needs the same questions.
 */

import { z } from "zod";
import { RETRIEVERS } from "../icl/retriever-catalog.js";
import { distinctLabels, retrieverMethods } from "../icl/retriever-methods.js";
import { type CompareTest, type ComparisonResult, compareMethods, type MethodInput } from "../metrics/compare.js";
import type { RunRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { datasetTask } from "../task/dataset-task.js";
import { LeverError } from "../util/errors.js";
import { type SeedGroup, subsetSpecs } from "./options.js";

/** The parts of a stored evaluation config (`lever.eval/1`) the report reads. */
const EvalConfigSchema = z.object({
  dataset: z.object({ name: z.string(), items: z.string() }),
  index: z.object({ name: z.string() }),
});

export interface MethodSource {
  run: RunRecord;
  retriever: string;
  /** "random", "topk-image", "selector:grpo_epoch2" (checkpoint file name without folder and extension). */
  short: string;
}

export interface EvalMethods {
  methods: MethodInput[];
  sources: Map<string, MethodSource>;
  /** The query dataset the runs evaluated, and the index datasets demonstrations came from. */
  dataset: string;
  indexDatasets: string[];
}

/** A run by id, or by name when exactly one run has that name. */
export function resolveRun(ws: Workspace, ref: string): RunRecord {
  const byId = ws.getRun(ref);
  if (byId !== undefined) return byId;
  const named = ws.listRuns().filter((r) => r.name === ref);
  if (named.length === 1) return named[0];
  if (named.length > 1)
    throw new LeverError(`several runs are named "${ref}" (${named.map((r) => r.id).join(", ")}); use a run id`, {
      field: "run",
    });
  throw new LeverError(`no run "${ref}" in this workspace`, { field: "run" });
}

export function evalConfigOf(run: RunRecord): z.infer<typeof EvalConfigSchema> {
  const parsed = EvalConfigSchema.safeParse(run.config);
  if (run.kind !== "eval" || !parsed.success)
    throw new LeverError(`run ${run.id} is a ${run.kind} run, not an evaluation run`, { record: run.id });
  return parsed.data;
}

/** Every retriever of the given evaluation runs as a method, in run order then retriever order. */
/** Every retriever of the runs as a method, or only those whose id ("RUN/RETRIEVER") is in `only`. */
export function loadEvalMethods(ws: Workspace, runs: readonly RunRecord[], only?: readonly string[]): EvalMethods {
  if (runs.length === 0) throw new LeverError("no evaluation run to compare");
  const configs = runs.map((run) => ({ run, config: evalConfigOf(run) }));
  const first = configs[0];
  for (const { run, config } of configs.slice(1))
    if (config.dataset.items !== first.config.dataset.items)
      throw new LeverError(
        `runs ${first.run.id} and ${run.id} evaluated different questions (datasets "${first.config.dataset.name}" and "${config.dataset.name}"); paired comparisons need the same query dataset`,
        { record: run.id },
      );
  const methods: MethodInput[] = [];
  const sources = new Map<string, MethodSource>();
  for (const { run } of configs) {
    const found = retrieverMethods(run.id, ws.getPredictions(run.id), runs.length > 1 ? `${run.name ?? run.id}/` : "");
    if (found.length === 0) throw new LeverError(`run ${run.id} has no predictions`, { record: run.id });
    for (const { method, retriever, short } of found) {
      if (only !== undefined && !only.includes(method.id)) continue;
      methods.push(method);
      sources.set(method.id, { run, retriever, short });
    }
  }
  distinctLabels(methods);
  return {
    methods,
    sources,
    dataset: first.config.dataset.name,
    indexDatasets: [...new Set(configs.map((c) => c.config.index.name))],
  };
}

/**
 * Resolves a method reference to a method id: its id or label, its retriever, its short name
 * ("selector:grpo") or that name without "selector:" ("grpo", the stage label an experiment gives it),
 * or RUN/RETRIEVER; `what` names the flag in errors.
 */
export function resolveMethod(ref: string, loaded: EvalMethods, what: string): string {
  const exact = loaded.methods.filter((m) => m.id === ref || m.label === ref);
  if (exact.length === 1) return exact[0].id;
  const matches = loaded.methods.filter((m) => {
    const s = loaded.sources.get(m.id) as MethodSource;
    const runNames = [s.run.id, ...(s.run.name ? [s.run.name] : [])];
    return (
      s.retriever === ref ||
      s.short === ref ||
      s.short === `${RETRIEVERS.selector.prefix}${ref}` ||
      runNames.some((run) => ref === `${run}/${s.retriever}` || ref === `${run}/${s.short}`)
    );
  });
  if (matches.length === 1) return matches[0].id;
  if (matches.length > 1)
    throw new LeverError(
      `"${ref}" matches several methods (${matches.map((m) => m.id).join(", ")}); name one as RUN/RETRIEVER`,
      { field: what },
    );
  throw new LeverError(`no method "${ref}" (methods: ${loaded.methods.map((m) => m.id).join(", ")})`, {
    field: what,
  });
}

/** Applies seed groups to the methods (in place). */
export function applySeedGroups(groups: readonly SeedGroup[], loaded: EvalMethods): void {
  const assigned = new Map<string, string>();
  const names = new Set<string>();
  for (const { name, members } of groups) {
    if (names.has(name)) throw new LeverError(`seed group "${name}" is given twice`, { field: "--seed-group" });
    names.add(name);
    if (members.length < 2)
      throw new LeverError(`seed group "${name}" needs at least two methods`, { field: "--seed-group" });
    for (const ref of members) {
      const id = resolveMethod(ref, loaded, "--seed-group");
      const other = assigned.get(id);
      if (other !== undefined)
        throw new LeverError(`method ${id} is in seed groups "${other}" and "${name}"`, { field: "--seed-group" });
      assigned.set(id, name);
    }
  }
  for (const m of loaded.methods) {
    const group = assigned.get(m.id);
    if (group !== undefined) m.group = group;
  }
}

/** The baseline row: the named method (or its seed group) or group, else the random retriever, else the first. */
export function chooseBaseline(ref: string | undefined, loaded: EvalMethods): { id: string; note: string | null } {
  const groups = new Set(loaded.methods.flatMap((m) => (m.group ? [m.group] : [])));
  const rowOf = (id: string) => loaded.methods.find((m) => m.id === id)?.group ?? id;
  if (ref !== undefined) {
    if (groups.has(ref)) return { id: ref, note: null };
    return { id: rowOf(resolveMethod(ref, loaded, "--baseline")), note: null };
  }
  const random = [
    ...new Set(loaded.methods.filter((m) => loaded.sources.get(m.id)?.retriever === "random").map((m) => rowOf(m.id))),
  ];
  const id = random.length === 1 ? random[0] : rowOf(loaded.methods[0].id);
  const why = random.length === 1 ? "the random retriever" : "the first method (no single random baseline)";
  return { id, note: `baseline: ${id}, ${why}; choose another with --baseline` };
}

export interface WorkspaceComparisonOptions {
  baseline?: string;
  /** "100", "all", … (see subsetSpecs). */
  subsets: readonly string[];
  test: CompareTest;
  clusterByImage: boolean;
  seedGroups: readonly SeedGroup[];
  seed: number;
  resamples: number;
  /** Only these methods ("RUN/RETRIEVER" ids; all of the runs' when absent). */
  methods?: readonly string[];
}

/** Compares the methods of the given evaluation runs (see compareMethods). */
export function compareEvalRuns(
  ws: Workspace,
  runs: readonly RunRecord[],
  options: WorkspaceComparisonOptions,
): { result: ComparisonResult; loaded: EvalMethods } {
  const loaded = loadEvalMethods(ws, runs, options.methods);
  applySeedGroups(options.seedGroups, loaded);
  const baseline = chooseBaseline(options.baseline, loaded);
  // The task's per-item outcome decides what McNemar would mean: "fully right" needs a 0/1-like score.
  const task = datasetTask(ws.requireDataset(loaded.dataset));
  const test = task.binaryOutcome ? options.test : task.pairedTest;
  const clusters = options.clusterByImage
    ? new Map(ws.loadItems(loaded.dataset).map((item) => [item.questionId, item.imageId]))
    : undefined;
  const result = compareMethods(loaded.methods, {
    baseline: baseline.id,
    subsets: subsetSpecs(options.subsets),
    seed: options.seed,
    resamples: options.resamples,
    test,
    clusters,
  });
  if (baseline.note !== null) result.notes.unshift(baseline.note);
  const { metric: name, ...wording } = task.wording;
  result.metric = { name, ...wording };
  if (test !== options.test)
    result.notes.unshift(
      `${task.wording.metric} per ${task.wording.unit} is continuous: p-values from the paired ${test} test (McNemar needs a right/wrong outcome)`,
    );
  return { result, loaded };
}
