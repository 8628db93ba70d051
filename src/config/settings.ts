/**
 * Settings have one source of truth: a zod schema whose fields carry their description
 * (`.describe()` / `.meta({ description })`) and default. From it we derive
 *  - the leaf fields (`settingFields`): path, flag name, kind, choices, default, description —
 *    the CLI turns them into options and help text, experiment files and `--set` overrides use the
 *    same paths;
 *  - the resolved value (`resolveSettings`): schema defaults < settings files < flags, merged by
 *    object key and validated ONCE, the first problem reported where the user wrote it (the flag, or
 *    the file with its key and line). `__proto__`, `constructor` and `prototype` are never settings:
 *    merging or setting them is refused, so no input reaches an object's prototype.
 *
 * Flag names: the kebab-case path without its first segment when the field is nested in a section
 * (`optim.lr` → `--lr`, `optim.schedule.kind` → `--schedule-kind`), the key itself at the top level,
 * or `.meta({ flag })`. A top-level section may name a prefix for its fields with
 * `.meta({ flagPrefix: "reward" })` (`reward.mode` → `--reward-mode`). `.meta({ defaultText })`
 * replaces a long default in help. Two fields of one command may not share a flag (checked when the
 * command is built).
 */
import { z } from "zod";
import { LeverError } from "../util/errors.js";
import { formatPath } from "../util/validate.js";

export type FieldKind = "boolean" | "number" | "integer" | "string" | "enum" | "list" | "json";

export interface SettingField {
  path: string[];
  flag: string;
  description: string;
  kind: FieldKind;
  /** Item kind of a list (comma-separated or repeated flag). */
  item?: "number" | "integer" | "string" | "enum";
  /** Exact length of a tuple-shaped list. */
  length?: number;
  choices?: string[];
  nullable: boolean;
  required: boolean;
  hasDefault: boolean;
  default?: unknown;
  /** Help text for the default when the value itself is too long to show. */
  defaultText?: string;
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  prefixItems?: JsonSchema[];
  default?: unknown;
  description?: string;
  flag?: string;
  flagPrefix?: string;
  defaultText?: string;
};

export const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The leaf fields of an object schema (nested objects are sections, records and unions are JSON leaves). */
export function settingFields(schema: z.ZodType): SettingField[] {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const out: SettingField[] = [];
  walk(json, [], [], true, out);
  return out;
}

function isSection(node: JsonSchema): boolean {
  return node.type === "object" && node.properties !== undefined && Object.keys(node.properties).length > 0;
}

/** `flagPath`: the path segments that make up the flag (sections at depth 1 contribute their prefix only). */
function walk(node: JsonSchema, path: string[], flagPath: string[], required: boolean, out: SettingField[]): void {
  if (path.length === 0 || isSection(node)) {
    const props = node.properties ?? {};
    for (const [key, child] of Object.entries(props)) {
      const section = isSection(child);
      const segment = !section || path.length > 0 ? [key] : child.flagPrefix ? [child.flagPrefix] : [];
      walk(child, [...path, key], [...flagPath, ...segment], (node.required ?? []).includes(key), out);
    }
    return;
  }
  out.push(leaf(node, path, flagPath, required));
}

function leaf(node: JsonSchema, path: string[], flagPath: string[], required: boolean): SettingField {
  const members = (node.anyOf ?? node.oneOf ?? [node]).filter((m) => m.type !== "null");
  const nullable = (node.anyOf ?? node.oneOf ?? []).some((m) => m.type === "null") || node.type === "null";
  const inner = members.length === 1 ? { ...members[0], ...withoutCombinators(node) } : node;
  const description = node.description ?? inner.description ?? members.find((m) => m.description)?.description ?? "";
  const base = {
    path,
    flag: node.flag ?? inner.flag ?? kebab(flagPath.join("-")),
    description,
    nullable,
    required: required && node.default === undefined,
    hasDefault: node.default !== undefined,
    ...(node.default !== undefined ? { default: node.default } : {}),
    ...(node.defaultText !== undefined ? { defaultText: node.defaultText } : {}),
  };
  if (members.length !== 1) return { ...base, kind: "json" };
  const type = Array.isArray(inner.type) ? undefined : inner.type;
  if (inner.enum?.every((v) => typeof v === "string"))
    return { ...base, kind: "enum", choices: inner.enum as string[] };
  if (inner.const !== undefined && typeof inner.const === "string")
    return { ...base, kind: "enum", choices: [inner.const] };
  if (type === "boolean") return { ...base, kind: "boolean" };
  if (type === "integer") return { ...base, kind: "integer" };
  if (type === "number") return { ...base, kind: "number" };
  if (type === "string") return { ...base, kind: "string" };
  if (type === "array") {
    const items = inner.prefixItems ?? (inner.items ? [inner.items] : []);
    const first = items[0];
    const sameKind = items.every(
      (i) => i.type === first?.type && (i.enum === undefined) === (first?.enum === undefined),
    );
    if (first !== undefined && sameKind) {
      const item =
        first.enum !== undefined
          ? "enum"
          : first.type === "integer"
            ? "integer"
            : first.type === "number"
              ? "number"
              : first.type === "string"
                ? "string"
                : undefined;
      if (item !== undefined)
        return {
          ...base,
          kind: "list",
          item,
          ...(item === "enum" ? { choices: first.enum as string[] } : {}),
          ...(inner.prefixItems !== undefined ? { length: inner.prefixItems.length } : {}),
        };
    }
  }
  return { ...base, kind: "json" };
}

function withoutCombinators(node: JsonSchema): JsonSchema {
  const { anyOf: _a, oneOf: _o, type: _t, ...rest } = node;
  return rest;
}

/** Help text of a field: its description, choices and default. */
export function fieldHelp(field: SettingField): string {
  const parts = [field.description.trim()];
  if (field.choices !== undefined) parts.push(`(${field.choices.join(" | ")})`);
  if (field.kind === "list")
    parts.push(field.length ? `(${field.length} comma-separated values)` : "(comma-separated or repeated)");
  if (field.kind === "json") parts.push("(JSON)");
  if (field.nullable) parts.push('("none" = off)');
  if (field.hasDefault) parts.push(`(default: ${field.defaultText ?? formatDefault(field.default)})`);
  else if (field.required) parts.push("(required)");
  return parts.filter((p) => p.length > 0).join(" ");
}

export function formatDefault(value: unknown): string {
  if (value === null || (Array.isArray(value) && value.length === 0)) return "none";
  if (Array.isArray(value) && value.every((v) => typeof v !== "object")) return value.join(",");
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Converts the text of one flag (or `--set` value) to the field's type; errors name `where`. */
export function parseFieldText(field: SettingField, text: string, where: string): unknown {
  const bad = (expected: string) => new LeverError(`expected ${expected}, got "${text}"`, { field: where });
  if (field.nullable && (text === "none" || text === "null")) return null;
  const scalar = (kind: string, t: string): unknown => {
    const s = t.trim();
    if (kind === "integer") {
      const n = Number(s);
      if (s === "" || !Number.isSafeInteger(n)) throw bad("an integer");
      return n;
    }
    if (kind === "number") {
      const n = Number(s);
      if (s === "" || !Number.isFinite(n)) throw bad("a number");
      return n;
    }
    if (kind === "enum") {
      if (!field.choices?.includes(s)) throw bad(`one of ${field.choices?.join(", ")}`);
      return s;
    }
    return t;
  };
  switch (field.kind) {
    case "boolean":
      if (text === "true") return true;
      if (text === "false") return false;
      throw bad("true or false");
    case "list": {
      const items = text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
        .map((s) => scalar(field.item ?? "string", s));
      if (field.length !== undefined && items.length !== field.length)
        throw bad(`${field.length} comma-separated values`);
      return items;
    }
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        throw bad("JSON");
      }
    default:
      return scalar(field.kind, text);
  }
}

/**
 * Keys that would reach an object's prototype instead of a setting (`--set __proto__.x=1` once wrote to
 * every object of the process): no schema has them, so they are refused wherever settings are merged.
 */
const UNSAFE_KEYS = new Set(["__proto__", "constructor", "prototype"]);

function checkKey(key: string, path: readonly string[]): void {
  if (UNSAFE_KEYS.has(key)) throw new LeverError("not a setting", { field: formatPath([...path, key]) || key });
}

/** Sets `value` at `path` inside `target`, creating sections. */
export function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  for (const [i, key] of path.entries()) checkKey(key, path.slice(0, i));
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep merge by object key; arrays and scalars of `over` replace those of `base`. */
export function mergeSettings(base: unknown, over: unknown, path: readonly string[] = []): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) {
    checkKey(key, path);
    out[key] = value;
  }
  for (const [key, value] of Object.entries(over)) {
    checkKey(key, path);
    out[key] = mergeSettings(base[key], value, [...path, key]);
  }
  return out;
}

function hasPath(value: unknown, path: readonly PropertyKey[]): boolean {
  let node = value;
  for (const key of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return false;
    if (!(String(key) in (node as object))) return false;
    node = (node as Record<string, unknown>)[String(key)];
  }
  return true;
}

/** One layer of settings, lowest priority first: a settings file, or the command line. */
export type SettingsLayer =
  | {
      kind: "file";
      file: string;
      value: unknown;
      locate?: (path: readonly PropertyKey[]) => number | undefined;
      prefix?: string[];
    }
  | { kind: "flags"; value: Record<string, unknown>; fields: SettingField[] };

/**
 * Merges the layers over the schema's defaults and validates once. The first issue is reported where
 * its value came from: the flag that set it, or the file (key path and line); a missing required
 * field names its flag when the schema has one.
 */
export function resolveSettings<S extends z.ZodType>(
  schema: S,
  layers: readonly SettingsLayer[],
  fields?: SettingField[],
): z.output<S> {
  let merged: unknown = {};
  for (const layer of layers) merged = mergeSettings(merged, layer.value);
  const parsed = schema.safeParse(merged);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue.path;
  for (const layer of [...layers].reverse()) {
    if (!hasPath(layer.value, path.slice(0, Math.max(1, path.length)))) {
      // An unknown key is reported on its parent object: look for the key inside the layer.
      const keys = (issue as { keys?: string[] }).keys;
      if (issue.code !== "unrecognized_keys" || keys === undefined || !hasPath(layer.value, [...path, keys[0]]))
        continue;
    }
    if (layer.kind === "flags") {
      const field = layer.fields.find((f) => f.path.length <= path.length && f.path.every((k, i) => k === path[i]));
      if (field !== undefined) return fail(issue.message, { field: `--${field.flag}` });
      continue;
    }
    const keys = (issue as { keys?: string[] }).keys;
    const where = issue.code === "unrecognized_keys" && keys ? [...path, keys[0]] : path;
    const line = layer.locate?.(where);
    const fieldPath = formatPath([...(layer.prefix ?? []), ...where]);
    return fail(`${issue.message}${line !== undefined ? ` (line ${line})` : ""}`, {
      file: layer.file,
      ...(fieldPath.length > 0 ? { field: fieldPath } : {}),
    });
  }
  const field = fields?.find((f) => f.path.length === path.length && f.path.every((k, i) => k === path[i]));
  if (field !== undefined)
    return fail(
      issue.message === "Invalid input: expected string, received undefined" || /received undefined/.test(issue.message)
        ? "is required"
        : issue.message,
      {
        field: `--${field.flag}`,
      },
    );
  return fail(issue.message, { field: formatPath(path) || undefined });
}

function fail(message: string, location: { file?: string; field?: string }): never {
  throw new LeverError(message, location);
}
