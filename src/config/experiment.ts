/**
 * Experiment files (`lever run FILE`): one declarative YAML or JSON file describing the whole chain —
 * data, pools, the VLM backend, beams, SFT, rollouts, RCE, GRPO (offline and online) and evaluation —
 * validated by the SAME zod schemas the stage commands use (one source for defaults, flags and help;
 * a stage section takes exactly the keys of its command's settings file, minus the inputs that the
 * chain wires from earlier stages).
 *
 * Sweeps: a list where the schema expects a single value (or a list of lists where it expects a list)
 * is a sweep; several sweeps form a grid, expanded in file order into variants. `--set a.b=v`
 * overrides any setting (v is read as YAML, so `--set grpo.kl.beta=[0.1,0.2]` is a sweep too).
 * Every variant is validated on its own; an error names the file, the key path and its line.
 */
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { BeamsSettingsSchema } from "../datagen/beams-stage.js";
import { RolloutsSettingsSchema } from "../datagen/rollouts-stage.js";
import { EvalSettingsSchema } from "../eval/config.js";
import { checkPoolsSettings, PoolsFieldsSchema } from "../pools/stage.js";
import { CompareSettingsSchema } from "../report/options.js";
import { WorldParamsSchema } from "../sim/params.js";
import { checkGrpoSettings, GrpoStageConfigSchema, RceStageConfigSchema } from "../train/rl-settings.js";
import { SftConfigSchema } from "../train/sft-run.js";
import { LeverError } from "../util/errors.js";
import { formatPath } from "../util/validate.js";
import { VlmSettingsSchema } from "../vlm/settings.js";
import { readSettingsFile } from "./file.js";
import { mergeSettings, resolveSettings, type SettingField, setPath, settingFields } from "./settings.js";

/** The `compare` section: `lever compare`'s settings but the output format (the chain writes a table and Markdown). */
export const ExperimentCompareSchema = CompareSettingsSchema.omit({ format: true });

const SplitFilesSchema = z
  .object({
    questions: z.string().min(1).describe("official questions JSON file"),
    annotations: z.string().min(1).describe("official annotations JSON file"),
    images: z.string().min(1).optional().describe("COCO root folder (<dir>/<split>2014/COCO_<split>2014_<id>.jpg)"),
    subset: z.string().optional().describe("items kept: first:N, random:N or all (default all)"),
  })
  .strict();

const EmbeddingFilesSchema = z
  .partialRecord(z.enum(EMBEDDING_KINDS), z.string().min(1))
  .describe("embedding matrix per kind (.npy with ids beside it, or .safetensors)");

const DataSchema = z
  .object({
    synth: WorldParamsSchema.optional().describe("a synthetic world answered by the simulated VLM (docs/simulator.md)"),
    import: z
      .object({
        train: SplitFilesSchema,
        val: SplitFilesSchema,
        embeddings: z.object({ train: EmbeddingFilesSchema, val: EmbeddingFilesSchema }).strict(),
      })
      .strict()
      .optional()
      .describe("official VQA files and their embeddings (real data)"),
  })
  .strict()
  .superRefine((d, ctx) => {
    if ((d.synth === undefined) === (d.import === undefined))
      ctx.addIssue({ code: "custom", path: [], message: "give exactly one of data.synth and data.import" });
  });

export const EvalSectionSchema = EvalSettingsSchema.omit({ dataset: true, index: true, run: true })
  .extend({
    baselines: z
      .array(z.string().min(1))
      .default(["zero", "random", "topk-image", "topk-text", "topk-joint"])
      .describe("baseline retrievers evaluated beside the trained selectors (oracle, informed: simulator only)"),
  })
  // Set by the chain: the trained selectors are the retrievers, and every pool is built like the training pools.
  .omit({ retrievers: true, k: true, poolSampler: true, selectorEmbedding: true });

export const ExperimentSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' and '-' only")
      .describe("experiment name (names its outputs)"),
    data: DataSchema,
    embedding: z.enum(EMBEDDING_KINDS).default("joint").describe("embedding the selectors read"),
    // The inputs the chain wires itself (datasets, artefact names, checkpoints) are not settings of a section.
    pools: PoolsFieldsSchema.omit({ queries: true, index: true, out: true, replace: true })
      .superRefine(checkPoolsSettings)
      .prefault({})
      .describe("each training query's pool (eval pools use the same sampler and K)"),
    vlm: VlmSettingsSchema.default(VlmSettingsSchema.parse({})),
    beams: BeamsSettingsSchema.omit({ dataset: true, pools: true, out: true, replace: true }).optional(),
    sft: SftConfigSchema.optional(),
    rollouts: RolloutsSettingsSchema.omit({
      dataset: true,
      pools: true,
      checkpoint: true,
      embedding: true,
      out: true,
      replace: true,
    }).optional(),
    rce: RceStageConfigSchema.optional(),
    grpo: GrpoStageConfigSchema.superRefine(checkGrpoSettings).optional(),
    online: GrpoStageConfigSchema.superRefine((s, ctx) => checkGrpoSettings(onlineGrpoConfig(s), ctx))
      .optional()
      .describe("online GRPO from the RCE checkpoint (grpo.online.enabled is set)"),
    eval: EvalSectionSchema.default(EvalSectionSchema.parse({})),
    compare: ExperimentCompareSchema.optional(),
    report: z
      .object({ enabled: z.boolean().default(true).describe("write the HTML report") })
      .strict()
      .prefault({}),
  })
  .strict();
export type Experiment = z.output<typeof ExperimentSchema>;

/** The GRPO settings of an experiment's `online` section: the section with online training switched on. */
export function onlineGrpoConfig<C extends { online: { enabled: boolean } }>(section: C): C {
  return { ...section, online: { ...section.online, enabled: true } };
}

export interface Variant {
  /** "grpo.kl.beta=0.12, grpo.seed=2" ("" without sweeps). */
  label: string;
  /** The swept values of this variant, by key path. */
  assignments: { path: string[]; value: unknown }[];
  experiment: Experiment;
}

export interface LoadedExperiment {
  file: string;
  variants: Variant[];
  /** The swept key paths, in file order. */
  sweeps: string[][];
}

let fieldsCache: SettingField[] | null = null;
function fields(): SettingField[] {
  fieldsCache ??= settingFields(ExperimentSchema);
  return fieldsCache;
}

/** Splits `a.b.c=value` (value read as YAML). */
export function parseSetOption(text: string): { path: string[]; value: unknown } {
  const eq = text.indexOf("=");
  if (eq <= 0) throw new LeverError(`expected key.path=value, got "${text}"`, { field: "--set" });
  const path = text.slice(0, eq).trim().split(".");
  if (path.some((p) => p === "")) throw new LeverError(`bad key path "${text.slice(0, eq)}"`, { field: "--set" });
  let value: unknown;
  try {
    value = parseYaml(text.slice(eq + 1));
  } catch {
    value = text.slice(eq + 1);
  }
  return { path, value };
}

/** Leaves of `value` with their paths (arrays are leaves). */
function leaves(value: unknown, path: string[] = []): { path: string[]; value: unknown }[] {
  if (typeof value === "object" && value !== null && !Array.isArray(value))
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [{ path, value }];
}

/**
 * Sections that are made once for all variants: sweeping them would be expanded and then ignored
 * (name, compare, report) or would give variants evaluated on different questions, which one
 * comparison cannot pair (data).
 */
const UNSWEPT = ["name", "data", "compare", "report"];

/** True when `value` at `path` is a sweep: a list where the schema wants one value, or a list of lists where it wants a list. */
function isSweep(path: string[], value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  const field = fields().find((f) => f.path.length === path.length && f.path.every((k, i) => k === path[i]));
  if (field === undefined) return false; // unknown or free-form keys are validated (and rejected) later
  if (field.kind === "list") return value.length > 0 && value.every(Array.isArray);
  return field.kind !== "json";
}

/** Reads, overrides, expands sweeps and validates every variant. */
export function loadExperiment(file: string, sets: readonly string[] = []): LoadedExperiment {
  const settings = readSettingsFile(file);
  let raw = settings.value;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new LeverError("an experiment file holds one object (name, data, pools, …)", { file });
  for (const set of sets) {
    const { path, value } = parseSetOption(set);
    const patch: Record<string, unknown> = {};
    setPath(patch, path, value);
    raw = mergeSettings(raw, patch);
  }
  const sweeps = leaves(raw).filter((l) => isSweep(l.path, l.value));
  for (const sweep of sweeps)
    if (UNSWEPT.includes(sweep.path[0] as string))
      throw new LeverError(
        `${pathText(sweep.path)} cannot be swept: every variant shares the experiment's ${sweep.path[0]} ` +
          "(one name, one set of evaluation questions, one comparison and report); run each value as its own " +
          "experiment, e.g. with --set name=… --set " +
          `${pathText(sweep.path)}=…`,
        { file, field: pathText(sweep.path) },
      );
  const grid: { path: string[]; value: unknown }[][] = [[]];
  for (const sweep of sweeps) {
    const next: { path: string[]; value: unknown }[][] = [];
    for (const partial of grid)
      for (const v of sweep.value as unknown[]) next.push([...partial, { path: sweep.path, value: v }]);
    grid.splice(0, grid.length, ...next);
  }
  const variants = grid.map((assignments): Variant => {
    const patch: Record<string, unknown> = {};
    for (const a of assignments) setPath(patch, a.path, a.value);
    const value = mergeSettings(raw, patch);
    const experiment = resolveSettings(ExperimentSchema, [
      { kind: "file", file, value, locate: settings.locate },
    ]) as Experiment;
    const label = assignments.map((a) => `${a.path.join(".")}=${JSON.stringify(a.value)}`).join(", ");
    return { label, assignments, experiment };
  });
  return { file, variants, sweeps: sweeps.map((s) => s.path) };
}

/** "a.b[2]" for messages. */
export const pathText = (path: readonly PropertyKey[]) => formatPath(path);
