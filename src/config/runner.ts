/**
 * `lever run`: plans and executes the stages of every variant of an experiment (src/config/
 * experiment.ts). Each stage has an IDENTITY — a hash of its own settings and of the identities of
 * the stages it reads — so variants that agree upstream share those stages (a β sweep reuses one set
 * of pools, beams, SFT and rollouts), and a stage that is done is reused on the next run
 * (`artifacts/experiments/stages/<stage>-<id>.json` records its outputs). Inside a stage the stage's
 * own resumability applies (per anchor, per query, per epoch, per prediction), so a crash or Ctrl-C
 * resumes where it stopped. After the variants: one comparison (baseline vs every method, with paired
 * intervals, McNemar, Holm; seeds grouped) and the HTML report.
 *
 * Stage graph (what each stage reads):
 *   data → pools → beams → sft → rollouts → rce → grpo
 *                                            └──→ online (from rce)
 *   eval reads data, the pools' sampler and K, and every trained checkpoint of the variants.
 * Operational settings do not enter identities — the VLM's cache, timeouts, replicas and
 * concurrency, and the stages' own `concurrency` (beams, rollouts, eval) and `batchSize` (eval), on
 * which no result depends; what changes an answer (backend, world, model, layout, prompts, generation
 * settings) does.
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { EMBEDDING_KINDS } from "../data/embeddings.js";
import { runBeams } from "../datagen/beams-stage.js";
import { failedTrajectoriesError, runRollouts } from "../datagen/rollouts-stage.js";
import { parseEvalOptions } from "../eval/config.js";
import { evaluate } from "../eval/evaluate.js";
import { makePools } from "../pools/stage.js";
import type { ComparisonResult } from "../report/compare.js";
import { renderComparison } from "../report/compare-render.js";
import { renderReportHtml } from "../report/html.js";
import { compareEvalRuns, resolveRun } from "../report/methods.js";
import { buildReportModel } from "../report/model.js";
import { importSynthSplit } from "../sim/ingest.js";
import { WORLD_FILE, writeSynthDataset } from "../sim/synth.js";
import { importEmbedding } from "../store/ingest/embeddings.js";
import { importVqa } from "../store/ingest/vqa.js";
import type { Workspace } from "../store/workspace.js";
import type { RlStageSettings } from "../train/rl-settings.js";
import { runRlStage } from "../train/rl-stage.js";
import { runSftStage } from "../train/sft-stage.js";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import { readJsonFile } from "../util/files.js";
import { hashValue } from "../util/hash.js";
import type { VlmSettings } from "../vlm/settings.js";
import {
  type Experiment,
  ExperimentCompareSchema,
  type LoadedExperiment,
  onlineGrpoConfig,
  type Variant,
} from "./experiment.js";

export const STAGES = ["data", "pools", "beams", "sft", "rollouts", "rce", "grpo", "online"] as const;
export type StageName = (typeof STAGES)[number];

/** VLM settings that change how fast or where answers come, never what they are. */
const OPERATIONAL_VLM_KEYS = new Set([
  "cache",
  "baseUrls",
  "apiKeyEnv",
  "imageCacheBytes",
  "concurrencyPerEndpoint",
  "timeoutMs",
  "maxRetries",
  "backoffBaseMs",
  "backoffMaxMs",
  "maxRetryAfterMs",
  "cooldownAfterFailures",
  "cooldownMs",
  "breakerMs",
  "preflight",
]);

export function vlmIdentity(vlm: VlmSettings): Record<string, unknown> {
  return Object.fromEntries(Object.entries(vlm).filter(([k]) => !OPERATIONAL_VLM_KEYS.has(k)));
}

/** Stage settings that change how fast a stage runs, never its result. */
const OPERATIONAL_STAGE_KEYS = new Set(["concurrency", "batchSize"]);

function withoutOperational(settings: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(settings).filter(([k]) => !OPERATIONAL_STAGE_KEYS.has(k)));
}

export interface PlannedStage {
  stage: StageName;
  id: string;
  /** Short, readable name of the stage's outputs in this variant (checkpoint labels). */
  label: string;
  deps: Partial<Record<StageName, string>>;
}

export interface PlannedVariant {
  variant: Variant;
  stages: PlannedStage[];
  evalId: string;
}

const short = (value: unknown) => hashValue(value).slice(0, 10);

/** The stages of one variant with their identities (no work done). */
export function planVariant(v: Variant): PlannedVariant {
  const e = v.experiment;
  const vlm = vlmIdentity(e.vlm);
  const stages: PlannedStage[] = [];
  const ids: Partial<Record<StageName, string>> = {};
  const add = (stage: StageName, settings: unknown, direct: StageName[]) => {
    // Every stage reads the datasets and (after them) the pool set too: already in its inputs'
    // identities, listed so it can find them.
    const base: StageName[] = stage === "data" ? [] : stage === "pools" ? ["data"] : ["data", "pools"];
    const deps: StageName[] = [...new Set<StageName>([...base, ...direct])];
    const depIds = Object.fromEntries(deps.map((d) => [d, ids[d]])) as Partial<Record<StageName, string>>;
    const id = short({ stage, settings, deps: depIds });
    ids[stage] = id;
    stages.push({ stage, id, label: stageLabel(stage, v), deps: depIds });
  };
  add("data", e.data, []);
  add("pools", e.pools, ["data"]);
  if (e.beams) add("beams", { beams: withoutOperational(e.beams), vlm, embedding: e.embedding }, ["pools"]);
  if (e.sft) {
    if (!e.beams) throw new LeverError("the sft section needs a beams section (SFT trains on beams)", { field: "sft" });
    add("sft", { sft: e.sft, embedding: e.embedding }, ["beams", "pools"]);
  }
  if (e.rollouts)
    add("rollouts", { rollouts: withoutOperational(e.rollouts), vlm, embedding: e.embedding }, [
      "pools",
      ...(e.sft ? (["sft"] as const) : []),
    ]);
  const rlVlm = (validationAnswers: boolean) => (validationAnswers ? vlm : null);
  if (e.rce) {
    if (!e.rollouts) throw new LeverError("the rce section needs a rollouts section", { field: "rce" });
    add("rce", { rce: e.rce, vlm: rlVlm(e.rce.validation.answers), embedding: e.embedding }, [
      "rollouts",
      ...(e.sft ? (["sft"] as const) : []),
    ]);
  }
  const start: StageName[] = e.rce ? ["rce"] : e.sft ? ["sft"] : [];
  if (e.grpo) {
    if (!e.rollouts)
      throw new LeverError("the grpo section needs a rollouts section (online GRPO is the online section)", {
        field: "grpo",
      });
    add("grpo", { grpo: e.grpo, vlm: rlVlm(e.grpo.validation.answers), embedding: e.embedding }, [
      "rollouts",
      ...start,
    ]);
  }
  if (e.online) add("online", { online: e.online, vlm, embedding: e.embedding }, ["pools", ...start]);
  const { baselines: _b, ...evalSettings } = e.eval;
  const evalId = short({
    eval: withoutOperational(evalSettings),
    pools: { sampler: e.pools.sampler, k: e.pools.k },
    vlm,
    data: ids.data,
    embedding: e.embedding,
  });
  return { variant: v, stages, evalId };
}

/** "grpo" plus the swept values that reach the stage ("grpo_beta-0.12_seed-2"). */
function stageLabel(stage: StageName, v: Variant): string {
  const upstream: Record<StageName, string[]> = {
    data: ["data"],
    pools: ["data", "pools"],
    beams: ["data", "pools", "vlm", "embedding", "beams"],
    sft: ["data", "pools", "vlm", "embedding", "beams", "sft"],
    rollouts: ["data", "pools", "vlm", "embedding", "beams", "sft", "rollouts"],
    rce: ["data", "pools", "vlm", "embedding", "beams", "sft", "rollouts", "rce"],
    grpo: ["data", "pools", "vlm", "embedding", "beams", "sft", "rollouts", "rce", "grpo"],
    online: ["data", "pools", "vlm", "embedding", "beams", "sft", "rollouts", "rce", "online"],
  };
  const parts = v.assignments
    .filter((a) => upstream[stage].includes(a.path[0]))
    .map((a) => `${a.path[a.path.length - 1]}-${String(a.value)}`.replace(/[^A-Za-z0-9.-]+/g, "-"));
  return [stage, ...parts].join("_");
}

export interface RunPlan {
  loaded: LoadedExperiment;
  variants: PlannedVariant[];
  /** Every distinct stage, in execution order, with the variants that use it. */
  unique: { stage: PlannedStage; variants: number[] }[];
}

export function plan(loaded: LoadedExperiment): RunPlan {
  const variants = loaded.variants.map(planVariant);
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

/** Where a done stage records its outputs. */
export function stageRecordPath(ws: Workspace, stage: PlannedStage): string {
  return ws.artifactPath(`experiments/stages/${stage.stage}-${stage.id}.json`);
}

type Outputs = Record<string, string>;

/** The outputs of a done stage, or null (not done, or its files are gone). */
export function readStageRecord(ws: Workspace, stage: PlannedStage): Outputs | null {
  const path = stageRecordPath(ws, stage);
  if (!existsSync(path)) return null;
  const record = readJsonFile(path) as { outputs: Outputs };
  // A record whose files were deleted since is not a done stage.
  const files = Object.entries(record.outputs)
    .filter(([k]) => k.endsWith("File"))
    .map(([, v]) => v);
  return files.every((f) => existsSync(f)) ? record.outputs : null;
}

export interface RunReport {
  /** Per stage name: stages run now and stages reused (done earlier or shared). */
  counts: Record<StageName, { run: number; reused: number }>;
  evalRuns: string[];
  trainingRuns: string[];
  comparison: string | null;
  reportPath: string | null;
}

export interface RunHooks {
  /** One line per event (stage starts, reuse, results). */
  log(line: string): void;
  /** Progress stream of the stages (null = silent). */
  progress: NodeJS.WritableStream | null;
  signal?: AbortSignal;
}

/** Executes the plan (resuming and reusing what is done). */
export async function execute(ws: Workspace, p: RunPlan, hooks: RunHooks): Promise<RunReport> {
  const counts = Object.fromEntries(STAGES.map((s) => [s, { run: 0, reused: 0 }])) as RunReport["counts"];
  const outputs = new Map<string, Outputs>();
  const note = (text: string) => hooks.log(`note: ${text}`);
  const progress = hooks.progress as unknown as { write(text: string): unknown; isTTY?: boolean } | null;
  // The training runs of the chain (run id → the stage's label), in the order they ran or were found.
  const runLabels: Record<string, string> = {};
  // Ctrl-C: the stage at work stores what it finished and stops (a training stage runs to its end);
  // no further stage starts.
  const interrupted = () =>
    new LeverError("interrupted; rerun the same command to resume (finished stages and work are kept)");
  for (const { stage, variants } of p.unique) {
    if (hooks.signal?.aborted) throw interrupted();
    const key = `${stage.stage}-${stage.id}`;
    const v = p.variants[variants[0]];
    const e = v.variant.experiment;
    const dep = (name: StageName) => {
      const id = stage.deps[name];
      const out = id === undefined ? undefined : outputs.get(`${name}-${id}`);
      if (out === undefined) throw new Error(`stage ${name} of ${key} has no outputs`);
      return out;
    };
    const done = readStageRecord(ws, stage);
    if (done !== null) {
      outputs.set(key, done);
      counts[stage.stage].reused += variants.length;
      if (done.runId) {
        runLabels[done.runId] = stage.label;
      }
      hooks.log(
        `${stage.stage} ${stage.id}: done earlier, reused${variants.length > 1 ? ` by ${variants.length} variants` : ""}`,
      );
      continue;
    }
    hooks.log(
      `${stage.stage} ${stage.id}: running${variants.length > 1 ? ` (shared by ${variants.length} variants)` : ""}`,
    );
    const out = await runStage(ws, stage, e, dep, { progress, note, signal: hooks.signal });
    if (out.runId) {
      runLabels[out.runId] = stage.label;
    }
    writeFileAtomic(
      stageRecordPath(ws, stage),
      `${JSON.stringify({ stage: stage.stage, id: stage.id, outputs: out }, null, 2)}\n`,
    );
    outputs.set(key, out);
    counts[stage.stage].run += 1;
    counts[stage.stage].reused += variants.length - 1;
  }

  // Evaluation: one run per evaluation identity, with the baselines and every variant's selectors.
  const evalRuns: string[] = [];
  const evaluated: string[] = []; // "RUN/RETRIEVER" of every method evaluated in this execution
  const seedGroups = new Map<string, string[]>();
  const byEval = new Map<string, PlannedVariant[]>();
  for (const pv of p.variants) byEval.set(pv.evalId, [...(byEval.get(pv.evalId) ?? []), pv]);
  for (const [evalId, group] of byEval) {
    if (hooks.signal?.aborted) throw interrupted();
    const first = group[0].variant.experiment;
    const data = outputs.get(`data-${group[0].stages.find((s) => s.stage === "data")?.id}`) as Outputs;
    const selectors = new Map<string, string>(); // label → checkpoint path
    for (const pv of group)
      for (const s of pv.stages) {
        const out = outputs.get(`${s.stage}-${s.id}`);
        if (out?.bestFile) selectors.set(s.label, labelledCheckpoint(ws, p.loaded, s.label, out.bestFile));
      }
    const { baselines, ...settings } = first.eval;
    const retrievers = [...baselines, ...[...selectors.values()].map((path) => `selector:${path}`)];
    hooks.log(`eval ${evalId}: ${retrievers.length} retrievers on ${settings.queries} of ${data.val}`);
    const result = await evaluate(
      ws,
      parseEvalOptions({
        ...settings,
        ...first.vlm,
        dataset: data.val,
        index: data.train,
        retrievers,
        run: `${p.loaded.variants[0].experiment.name}-eval-${evalId}`,
        poolSampler: first.pools.sampler,
        k: first.pools.k,
        selectorEmbedding: first.embedding,
        ...(data.world ? { world: data.world } : {}),
      }),
      { signal: hooks.signal, progress: progress as never, clusterByImage: settings.clusterByImage },
    );
    if (result.stats.aborted)
      throw new LeverError("interrupted during the evaluation; rerun the same command to resume");
    evalRuns.push(result.runId);
    for (const retriever of new Set(result.summary.cells.map((c) => c.retriever)))
      evaluated.push(`${result.runId}/${retriever}`);
    // Variants that differ only in a seed are one method with mean ± sd.
    for (const pv of group)
      for (const s of pv.stages) {
        const seedless = s.label.replace(/_seed-[^_]+/g, "");
        if (seedless === s.label) continue;
        const path = selectors.get(s.label);
        if (path === undefined) continue;
        const members = seedGroups.get(seedless) ?? [];
        const retriever = result.summary.cells.find((c) => c.retriever.startsWith(`selector:${path}@`))?.retriever;
        if (retriever !== undefined && !members.includes(`${result.runId}/${retriever}`))
          members.push(`${result.runId}/${retriever}`);
        seedGroups.set(seedless, members);
      }
  }

  // The comparison and the report cover the methods evaluated now: an evaluation run is shared by the
  // experiment's runs with the same evaluation settings, so it also holds earlier checkpoints' rows.
  const e0 = p.loaded.variants[0].experiment;
  const compareOptions = {
    ...(e0.compare ?? ExperimentCompareSchema.parse({})),
    seedGroups: [...seedGroups].filter(([, m]) => m.length > 1).map(([name, m]) => `${name}=${m.join("+")}`),
    methods: evaluated,
  };
  let result: ComparisonResult | null = null;
  let reportPath: string | null = null;
  if (e0.report.enabled && evalRuns.length > 0) {
    const model = buildReportModel(ws, {
      ...compareOptions,
      title: `lever run ${e0.name}`,
      examples: 5,
      warnings: [],
      runs: [...evalRuns, ...Object.keys(runLabels)],
      runLabels,
    });
    result = model.comparison;
    reportPath = resolve(ws.dir, "reports", `${e0.name}.html`);
    writeFileAtomic(reportPath, await renderReportHtml(model));
  }
  let comparison: string | null = null;
  if (e0.compare !== undefined && evalRuns.length > 0) {
    result ??= compareEvalRuns(
      ws,
      evalRuns.map((id) => resolveRun(ws, id)),
      compareOptions,
    ).result;
    comparison = renderComparison(result, "table");
    writeFileAtomic(ws.artifactPath(`experiments/${e0.name}/comparison.md`), renderComparison(result, "markdown"));
  }
  return { counts, evalRuns, trainingRuns: Object.keys(runLabels), comparison, reportPath };
}

/** A hard link (copy when linking fails) of a checkpoint under a readable name: the comparison labels methods by file name. */
function labelledCheckpoint(ws: Workspace, loaded: LoadedExperiment, label: string, file: string): string {
  const name = loaded.variants[0].experiment.name;
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

interface StageContext {
  progress: { write(text: string): unknown; isTTY?: boolean } | null;
  note: (text: string) => void;
  signal?: AbortSignal;
}

/** Runs one stage; returns its outputs (names, files, run ids). */
async function runStage(
  ws: Workspace,
  stage: PlannedStage,
  e: Experiment,
  dep: (name: StageName) => Outputs,
  ctx: StageContext,
): Promise<Outputs> {
  const tag = `x${stage.id}`;
  switch (stage.stage) {
    case "data":
      return runData(ws, e, tag);
    case "pools": {
      const data = dep("data");
      const summary = makePools(ws, { ...e.pools, queries: data.train, index: data.train, out: tag, replace: false });
      return { name: summary.name, train: data.train };
    }
    case "beams": {
      const data = dep("data");
      const result = await runBeams(
        ws,
        {
          ...(e.beams as NonNullable<Experiment["beams"]>),
          dataset: data.train,
          pools: dep("pools").name,
          out: tag,
          replace: false,
        },
        withWorld(e.vlm, data),
        { progress: ctx.progress, note: ctx.note, signal: ctx.signal },
      );
      if (result.artifact === null && ctx.signal?.aborted === true)
        throw new LeverError("interrupted during the beam search; rerun the same command to resume");
      if (result.artifact === null)
        throw new LeverError(`beam search stopped with ${result.failures.length} failed anchors; rerun to retry them`);
      return { name: result.artifact.name, runId: result.runId };
    }
    case "sft": {
      const data = dep("data");
      const result = await runSftStage(ws, {
        beams: dep("beams").name,
        pools: dep("pools").name,
        dataset: data.train,
        embedding: e.embedding,
        name: tag,
        config: e.sft as NonNullable<Experiment["sft"]>,
        progress: ctx.progress,
        note: ctx.note,
      });
      return trained(result.runId, result.bestCheckpoint, result.checkpoints);
    }
    case "rollouts": {
      const data = dep("data");
      const init = stage.deps.sft !== undefined ? dep("sft").bestFile : undefined;
      const result = await runRollouts(
        ws,
        {
          ...(e.rollouts as NonNullable<Experiment["rollouts"]>),
          dataset: data.train,
          pools: dep("pools").name,
          ...(init !== undefined ? { checkpoint: init } : {}),
          embedding: e.embedding,
          out: tag,
          replace: false,
        },
        withWorld(e.vlm, data),
        { progress: ctx.progress, note: ctx.note, signal: ctx.signal },
      );
      if (result.artifact === null && ctx.signal?.aborted === true)
        throw new LeverError("interrupted during the rollouts; rerun the same command to resume");
      if (result.artifact === null)
        throw new LeverError("rollouts stopped before every query was scored; rerun to resume");
      // As `lever rollouts`: the stage is not done while trajectories failed, so the rerun retries them.
      if (result.stats.failed.trajectories > 0) throw failedTrajectoriesError(result);
      return { name: result.artifact.name, runId: result.runId };
    }
    case "rce":
    case "grpo":
    case "online":
      return runRl(ws, stage, stage.stage, e, dep, ctx);
  }
}

/** An RCE, GRPO or online GRPO stage of the chain: it trains from the RCE or SFT checkpoint before it. */
async function runRl(
  ws: Workspace,
  stage: PlannedStage,
  kind: "rce" | "grpo" | "online",
  e: Experiment,
  dep: (name: StageName) => Outputs,
  ctx: StageContext,
): Promise<Outputs> {
  const data = dep("data");
  const initStage = (["rce", "sft"] as const).find((s) => stage.deps[s] !== undefined && s !== kind);
  const init = initStage !== undefined ? dep(initStage).bestFile : undefined;
  const result = await runRlStage(ws, {
    ...rlSettings(kind, e),
    inputs: {
      ...(kind !== "online" ? { rollouts: dep("rollouts").name } : {}),
      pools: dep("pools").name,
      dataset: data.train,
      embedding: e.embedding,
      ...(init !== undefined ? { init } : {}),
      name: `x${stage.id}`,
    },
    vlm: withWorld(e.vlm, data),
    progress: ctx.progress,
    note: ctx.note,
  });
  return trained(result.runId, result.bestCheckpoint, result.checkpoints);
}

/** The settings a chain stage trains with, tagged with the RL stage that trains them. */
function rlSettings(kind: "rce" | "grpo" | "online", e: Experiment): RlStageSettings {
  switch (kind) {
    case "rce":
      return { stage: "rce", config: e.rce as NonNullable<Experiment["rce"]> };
    case "grpo":
      return { stage: "grpo", config: e.grpo as NonNullable<Experiment["grpo"]> };
    case "online":
      return { stage: "grpo", config: onlineGrpoConfig(e.online as NonNullable<Experiment["online"]>) };
  }
}

function trained(runId: string, best: string | null, checkpoints: readonly string[]): Outputs {
  const bestFile = best ?? checkpoints.at(-1);
  if (bestFile === undefined) throw new LeverError(`run ${runId} wrote no checkpoint`);
  return { runId, bestFile };
}

function withWorld(vlm: VlmSettings, data: Outputs): VlmSettings {
  return data.world !== undefined && vlm.vlm === "sim" && vlm.world === undefined ? { ...vlm, world: data.world } : vlm;
}

/** Writes (synthetic) or reads (official files) the two splits and their embeddings into the workspace. */
function runData(ws: Workspace, e: Experiment, tag: string): Outputs {
  const names = { train: `${tag}-train`, val: `${tag}-val` };
  const out: Outputs = { ...names };
  if (e.data.synth !== undefined) {
    const dir = join(ws.dir, "experiments", "data", tag);
    if (!existsSync(join(dir, WORLD_FILE))) writeSynthDataset({ out: dir, params: e.data.synth, images: true });
    out.world = join(dir, WORLD_FILE);
    out.worldFile = out.world;
    for (const split of ["train", "val"] as const) importSynthSplit(ws, dir, split, names[split]);
    return out;
  }
  const imp = e.data.import as NonNullable<Experiment["data"]["import"]>;
  for (const split of ["train", "val"] as const) {
    const files = imp[split];
    if (ws.getDataset(names[split]) === undefined)
      importVqa(ws.dir, {
        name: names[split],
        split,
        questionsFile: files.questions,
        annotationsFile: files.annotations,
        ...(files.images !== undefined ? { images: { root: files.images } } : {}),
        ...(files.subset !== undefined ? { subset: files.subset } : {}),
      });
    for (const [kind, file] of Object.entries(imp.embeddings[split]))
      if (ws.getEmbedding(names[split], kind) === undefined)
        importEmbedding(ws, { file, dataset: names[split], kind: kind as (typeof EMBEDDING_KINDS)[number] });
  }
  return out;
}
