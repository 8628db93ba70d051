/**
 * The evaluation step of `lever run`: one evaluation run per evaluation identity
 * (`<name>-eval-<id>`; an earlier build's run keeps its name: src/experiment/identity.ts), holding the baselines and every trained selector of the variants that share
 * it, so all of them are compared on the same questions. A selector is evaluated as its checkpoint
 * linked under its stage's label (`experiments/<name>/checkpoints/<label>.safetensors`), which names
 * it in every comparison of the run (`selector:<label>`). Returns, as data, the methods evaluated now
 * ("RUN/RETRIEVER") and the seed groups: the checkpoints whose labels differ only in swept seeds are
 * one method of the comparison.
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { parseEvalOptions } from "../eval/config.js";
import { evalInterrupted, evaluate } from "../eval/evaluate.js";
import type { SeedGroup } from "../report/options.js";
import type { Workspace } from "../store/workspace.js";
import type { ProgressStream } from "../util/progress.js";
import { chosenRetriever, finalRows, type GuardResult, guardChoices, guardVariant, outputOf } from "./guard.js";
import { evalRunNames, runName } from "./identity.js";
import type { PlannedVariant, RunPlan } from "./plan.js";
import { type DataOutputs, interruptedError, type StageOutputMap, trainedOutputs } from "./stages.js";

interface Hooks {
  log(line: string): void;
  progress: ProgressStream | null;
  signal?: AbortSignal;
}

export interface Evaluation {
  evalRuns: string[];
  /** "RUN/RETRIEVER" of every method evaluated in this execution. */
  methods: string[];
  /** Methods that differ only in their seed (two or more each). */
  seedGroups: SeedGroup[];
}

/** Evaluates every evaluation identity of the plan. */
export async function evaluateVariants(
  ws: Workspace,
  p: RunPlan,
  outputs: StageOutputMap,
  hooks: Hooks,
): Promise<Evaluation> {
  const evalRuns: string[] = [];
  const methods: string[] = [];
  const seedMembers = new Map<string, string[]>(); // seed group → its methods, over every evaluation
  const byEval = new Map<string, PlannedVariant[]>();
  for (const pv of p.variants) byEval.set(pv.evalId, [...(byEval.get(pv.evalId) ?? []), pv]);
  for (const [evalId, group] of byEval) {
    if (hooks.signal?.aborted) throw interruptedError();
    const selectors = new Map<string, string>(); // label → checkpoint path
    for (const pv of group)
      for (const s of pv.stages) {
        const out = trainedOutputs(s.stage, outputs, s.id);
        if (out !== undefined) selectors.set(s.label, labelledCheckpoint(ws, p, s.label, out.bestFile));
      }
    const guards: GuardResult[] = [];
    for (const pv of group) {
      if (hooks.signal?.aborted) throw interruptedError();
      const guard = await guardVariant(ws, pv, outputs, (label) => selectors.get(label) as string, hooks);
      // Variants of a sweep that share their final stage share its guard (one evaluation, one final method).
      if (guard !== null && !guards.some((g) => g.label === guard.label)) guards.push(guard);
    }
    const result = await evaluateGroup(ws, p, evalId, group, outputs, [...selectors.values()], guards, hooks);
    evalRuns.push(result.runId);
    const retrievers = [...result.retrievers, ...writeFinalMethods(ws, result.runId, result.retrievers, guards, hooks)];
    for (const retriever of retrievers) methods.push(`${result.runId}/${retriever}`);
    for (const pv of group)
      for (const s of pv.stages) {
        const path = selectors.get(s.label);
        if (s.seedGroup === null || path === undefined) continue;
        const members = seedMembers.get(s.seedGroup) ?? [];
        const retriever = retrievers.find((r) => r.startsWith(`selector:${path}@`));
        if (retriever !== undefined && !members.includes(`${result.runId}/${retriever}`))
          members.push(`${result.runId}/${retriever}`);
        seedMembers.set(s.seedGroup, members);
      }
  }
  const seedGroups = [...seedMembers]
    .filter(([, members]) => members.length > 1)
    .map(([name, members]) => ({ name, members }));
  return { evalRuns, methods, seedGroups };
}

/** One evaluation run: the baselines and the given selector checkpoints, with the first variant's settings. */
async function evaluateGroup(
  ws: Workspace,
  p: RunPlan,
  evalId: string,
  group: PlannedVariant[],
  outputs: StageOutputMap,
  selectors: string[],
  guards: readonly GuardResult[],
  hooks: Hooks,
) {
  const first = group[0].variant.experiment;
  const data = outputOf(group[0], outputs, "data") as DataOutputs;
  const { baselines, ...settings } = first.eval;
  // A guarded variant's final method copies the prior's or a guard baseline's rows where it chose them:
  // the evaluation must hold those rows.
  const chosen = guards.flatMap(guardChoices).filter((r) => !baselines.includes(r));
  const retrievers = [...baselines, ...new Set(chosen), ...selectors.map((path) => `selector:${path}`)];
  hooks.log(`eval ${evalId}: ${retrievers.length} retrievers on ${settings.queries} of ${data.val}`);
  const result = await evaluate(
    ws,
    parseEvalOptions({
      ...settings,
      ...first.vlm,
      dataset: data.val,
      index: data.train,
      retrievers,
      run: runName(
        ws,
        "eval",
        evalRunNames(p.loaded.variants[0].experiment, { id: evalId, legacyId: group[0].legacyEvalId }),
      ),
      poolSampler: first.pools.sampler,
      k: first.pools.k,
      selectorEmbedding: first.embedding,
      ...(data.world ? { world: data.world } : {}),
    }),
    {
      signal: hooks.signal,
      progress: hooks.progress,
      clusterByImage: settings.clusterByImage,
    },
  );
  if (result.stats.aborted) throw evalInterrupted(result);
  for (const note of result.notes) if (note.startsWith("vote scale")) hooks.log(`eval ${evalId}: ${note}`);
  return result;
}

/**
 * Each guarded variant's final method (`final:<label>`, src/experiment/guard.ts) written into the
 * evaluation run from its stored rows; returns the retriever names written. Logs the fallbacks.
 */
function writeFinalMethods(
  ws: Workspace,
  runId: string,
  retrievers: readonly string[],
  guards: readonly GuardResult[],
  hooks: Hooks,
): string[] {
  if (guards.length === 0) return [];
  const rows = ws.getPredictions(runId);
  const written: string[] = [];
  for (const guard of guards) {
    // The guard loaded the same linked checkpoint file, so its retriever name is the evaluation's.
    const selector = retrievers.find((r) => r === guard.selector);
    if (selector === undefined) continue;
    ws.putPredictions(finalRows(rows, guard, selector));
    written.push(`final:${guard.label}`);
    hooks.log(finalText(guard, selector));
  }
  return written;
}

/** `final:online = online at 2, 3, 4 shots; vote at 1 shot (each validated against topk-joint on the guard's questions)` */
function finalText(guard: GuardResult, selector: string): string {
  const source = chosenRetriever(guard, selector);
  const shots = new Map<string, number[]>();
  for (const d of guard.decisions) shots.set(source(d.shot), [...(shots.get(source(d.shot)) ?? []), d.shot]);
  const name = (retriever: string) =>
    retriever === selector ? guard.label : retriever === guard.prior ? `${retriever} (the prior)` : retriever;
  if (shots.size === 1 && shots.has(selector))
    return `final:${guard.label} = ${guard.label} at every shot (validated against ${guard.prior})`;
  const parts = [...shots].map(
    ([r, s]) => `${name(r)} at ${s.join(", ")} shot${s.length === 1 && s[0] === 1 ? "" : "s"}`,
  );
  return `final:${guard.label} = ${parts.join("; ")} (each validated against ${guard.prior} on the guard's questions)`;
}

/** A hard link (copy when linking fails) of a checkpoint under its label: the comparison names selectors by file name. */
function labelledCheckpoint(ws: Workspace, p: RunPlan, label: string, file: string): string {
  const name = p.loaded.variants[0].experiment.name;
  const target = ws.artifactPath(`experiments/${name}/checkpoints/${label}.safetensors`);
  if (existsSync(target)) {
    if (readFileSync(target).equals(readFileSync(file))) return target;
    rmSync(target);
  }
  mkdirSync(dirname(target), { recursive: true });
  try {
    linkSync(file, target);
  } catch {
    copyFileSync(file, target);
  }
  return target;
}
