/**
 * Loading an experiment file (the format: src/experiment/schema.ts). Sweeps: a list where the schema
 * expects a single value (or a list of lists where it expects a list) is a sweep; several sweeps form a
 * grid, expanded in file order into variants. `--set a.b=v` overrides any setting (v is read as YAML, so
 * `--set grpo.kl.beta=[0.1,0.2]` is a sweep too). Every variant is validated on its own; an error names
 * the file, the key path and its line. An empty sweep (`seed: []`) and a grid over MAX_VARIANTS are
 * refused before anything is expanded.
 */
import { parse as parseYaml } from "yaml";
import { readSettingsFile } from "../config/file.js";
import { mergeSettings, resolveSettings, type SettingField, setPath, settingFields } from "../config/settings.js";
import { LeverError } from "../util/errors.js";
import { formatPath } from "../util/validate.js";
import { type Experiment, ExperimentSchema } from "./schema.js";

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
  checkGrid(file, sweeps as { path: string[]; value: unknown[] }[]);
  let grid: { path: string[]; value: unknown }[][] = [[]];
  for (const sweep of sweeps) {
    const next: { path: string[]; value: unknown }[][] = [];
    for (const partial of grid)
      for (const v of sweep.value as unknown[]) next.push([...partial, { path: sweep.path, value: v }]);
    grid = next;
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

/** The most variants one experiment may expand to; a larger grid is refused before anything is expanded. */
export const MAX_VARIANTS = 1000;

/** Every sweep has a value (an empty list would silently make zero variants) and the grid is not huge. */
function checkGrid(file: string, sweeps: readonly { path: string[]; value: unknown[] }[]): void {
  for (const sweep of sweeps)
    if (sweep.value.length === 0)
      throw new LeverError("an empty list sweeps over no values: give at least one value, or remove the key", {
        file,
        field: pathText(sweep.path),
      });
  const size = sweeps.reduce((n, s) => n * s.value.length, 1);
  if (size > MAX_VARIANTS)
    throw new LeverError(
      `the sweeps make ${size.toLocaleString("en-US")} variants (${sweeps.map((s) => `${pathText(s.path)}: ${s.value.length}`).join(" × ")}); ` +
        `at most ${MAX_VARIANTS} in one experiment — split it into several`,
      { file },
    );
}

/** "a.b[2]" for messages. */
const pathText = (path: readonly PropertyKey[]) => formatPath(path);
