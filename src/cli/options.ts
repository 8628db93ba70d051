/**
 * Commander options generated from settings schemas (src/config/settings.ts): one option per schema
 * field, help text = the field's description, choices and default; an optional `--config FILE`-style
 * option per schema for a JSON/YAML settings file. Commander itself holds no defaults: the schema
 * does, so `resolve` can tell what the user set (file < flags) and validates once.
 */
import { type Command, Option } from "commander";
import type { z } from "zod";
import { readSettingsFile } from "../config/file.js";
import {
  fieldHelp,
  parseFieldText,
  resolveSettings,
  type SettingField,
  type SettingsLayer,
  setPath,
  settingFields,
} from "../config/settings.js";

export interface SettingsBinding<S extends z.ZodType> {
  schema: S;
  fields: SettingField[];
  /** Name of the settings-file option (e.g. "config" → `--config FILE`), if any. */
  fileOption?: string;
}

const PLACEHOLDER: Record<SettingField["kind"], string> = {
  boolean: "",
  number: "x",
  integer: "n",
  string: "text",
  enum: "name",
  list: "list",
  json: "json",
};

const usedFlags = new WeakMap<Command, Set<string>>();

function claim(command: Command, flag: string): void {
  let used = usedFlags.get(command);
  if (!used) {
    used = new Set(command.options.map((o) => o.attributeName()));
    usedFlags.set(command, used);
  }
  if (used.has(flag)) throw new Error(`lever ${command.name()}: two settings would both be --${flag}`);
  used.add(flag);
}

/** The commander attribute name of a field's flag (`schedule-kind` → `scheduleKind`). */
function attribute(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Adds one option per leaf of `schema` (minus `exclude`d paths) and, with `fileOption`, a settings
 * file option. Returns the binding `resolve` needs.
 */
export function bindSettings<S extends z.ZodType>(
  command: Command,
  schema: S,
  options: { fileOption?: string; fileHelp?: string; exclude?: readonly string[] } = {},
): SettingsBinding<S> {
  const fields = settingFields(schema).filter((f) => !options.exclude?.includes(f.path.join(".")));
  for (const field of fields) {
    const negate = field.kind === "boolean" && field.default === true;
    const flag = negate ? `no-${field.flag}` : field.flag;
    claim(command, field.flag);
    const option =
      field.kind === "boolean"
        ? new Option(`--${flag}`, negate ? negatedHelp(field) : fieldHelp(field))
        : new Option(`--${field.flag} <${PLACEHOLDER[field.kind]}>`, fieldHelp(field));
    if (field.kind === "list" && field.length === undefined)
      option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    command.addOption(option);
  }
  if (options.fileOption !== undefined) {
    claim(command, options.fileOption);
    command.addOption(
      new Option(
        `--${options.fileOption} <file>`,
        options.fileHelp ?? "settings file (JSON or YAML) with any of these settings; flags override it",
      ),
    );
  }
  return { schema, fields, fileOption: options.fileOption };
}

/**
 * Help of a setting that is on by default and so shows as `--no-<flag>`: "(default: true)" beside
 * `--no-greedy` read as if the flag were on, so the text says what the setting does and that the flag
 * turns it off.
 */
export function negatedHelp(field: SettingField): string {
  const what = fieldHelp({ ...field, hasDefault: false, required: false });
  return `${what} — on by default; --no-${field.flag} turns it off`;
}

/** The values the user passed as flags, as a nested object (parsed to the fields' types). */
export function flagValues(command: Command, fields: readonly SettingField[]): Record<string, unknown> {
  const opts = command.opts() as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const name = attribute(field.flag);
    if (command.getOptionValueSource(name) !== "cli") continue;
    const raw = opts[name];
    const where = `--${field.flag}`;
    let value: unknown;
    if (field.kind === "boolean") value = raw === true;
    else if (field.kind === "list" && Array.isArray(raw))
      value = raw.flatMap((text) => parseFieldText(field, String(text), where) as unknown[]);
    else value = parseFieldText(field, String(raw), where);
    setPath(out, field.path, value);
  }
  return out;
}

/**
 * The validated settings of one binding: schema defaults < `base` (e.g. an experiment's section) <
 * the settings file < flags.
 */
export function resolve<S extends z.ZodType>(
  command: Command,
  binding: SettingsBinding<S>,
  base?: { value: unknown; file: string; prefix?: string[] },
): z.output<S> {
  const layers: SettingsLayer[] = [];
  if (base !== undefined) layers.push({ kind: "file", ...base });
  const file =
    binding.fileOption !== undefined
      ? (command.opts()[attribute(binding.fileOption)] as string | undefined)
      : undefined;
  if (file !== undefined) {
    const settings = readSettingsFile(file);
    layers.push({ kind: "file", file, value: settings.value, locate: settings.locate });
  }
  layers.push({ kind: "flags", value: flagValues(command, binding.fields), fields: binding.fields });
  return resolveSettings(binding.schema, layers, binding.fields);
}
