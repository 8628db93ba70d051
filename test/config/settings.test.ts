import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { readSettingsFile } from "../../src/config/file.js";
import { mergeSettings, parseFieldText, resolveSettings, settingFields } from "../../src/config/settings.js";
import { leverErrorOf } from "../helpers/errors.js";

const Schema = z
  .object({
    name: z.string().min(1).describe("a required name"),
    seed: z.number().int().default(7).describe("seed"),
    optim: z
      .object({
        lr: z.number().positive().default(0.1).describe("learning rate"),
        clip: z.number().positive().nullable().default(1).describe("clip"),
        betas: z.tuple([z.number(), z.number()]).default([0.9, 0.99]).describe("betas"),
        schedule: z
          .object({
            kind: z.enum(["cosine", "constant"]).default("cosine").meta({ flag: "schedule", description: "k" }),
          })
          .strict()
          .default({ kind: "cosine" }),
      })
      .strict()
      .default({ lr: 0.1, clip: 1, betas: [0.9, 0.99], schedule: { kind: "cosine" } }),
    tags: z.array(z.string()).default([]).describe("tags"),
    fast: z.boolean().default(true).describe("go fast"),
    extra: z.record(z.string(), z.unknown()).default({}).describe("anything"),
  })
  .strict();

describe("settingFields", () => {
  it("flattens sections into flags, with kinds, choices, defaults and meta overrides", () => {
    const fields = Object.fromEntries(settingFields(Schema).map((f) => [f.path.join("."), f]));
    expect(Object.keys(fields)).toEqual([
      "name",
      "seed",
      "optim.lr",
      "optim.clip",
      "optim.betas",
      "optim.schedule.kind",
      "tags",
      "fast",
      "extra",
    ]);
    expect(fields.name).toMatchObject({ flag: "name", kind: "string", required: true, hasDefault: false });
    expect(fields["optim.lr"]).toMatchObject({
      flag: "lr",
      kind: "number",
      default: 0.1,
      description: "learning rate",
    });
    expect(fields["optim.clip"]).toMatchObject({ kind: "number", nullable: true });
    expect(fields["optim.betas"]).toMatchObject({ kind: "list", item: "number", length: 2 });
    expect(fields["optim.schedule.kind"]).toMatchObject({
      flag: "schedule",
      kind: "enum",
      choices: ["cosine", "constant"],
    });
    expect(fields.tags).toMatchObject({ kind: "list", item: "string" });
    expect(fields.fast).toMatchObject({ kind: "boolean", default: true });
    expect(fields.extra).toMatchObject({ kind: "json" });
  });

  it("parses flag text to the field's type and names the flag on bad input", () => {
    const fields = Object.fromEntries(settingFields(Schema).map((f) => [f.path.join("."), f]));
    expect(parseFieldText(fields["optim.lr"], "1e-3", "--lr")).toBe(0.001);
    expect(parseFieldText(fields["optim.clip"], "none", "--clip")).toBeNull();
    expect(parseFieldText(fields["optim.betas"], "0.8, 0.9", "--betas")).toEqual([0.8, 0.9]);
    expect(parseFieldText(fields.extra, '{"a":1}', "--extra")).toEqual({ a: 1 });
    expect(leverErrorOf(() => parseFieldText(fields["optim.lr"], "fast", "--lr")).message).toBe(
      'field "--lr": expected a number, got "fast"',
    );
    expect(leverErrorOf(() => parseFieldText(fields["optim.betas"], "0.9", "--betas")).message).toMatch(
      /2 comma-separated/,
    );
    expect(leverErrorOf(() => parseFieldText(fields.seed, "1.5", "--seed")).message).toMatch(/an integer/);
  });
});

describe("resolveSettings", () => {
  const fields = settingFields(Schema);
  const dir = mkdtempSync(join(tmpdir(), "lever-settings-"));

  it("layers defaults < file < flags, merging sections key by key", () => {
    const value = resolveSettings(
      Schema,
      [
        { kind: "file", file: "a.json", value: { name: "x", optim: { lr: 0.5, clip: null } } },
        { kind: "flags", value: { optim: { lr: 0.25 } }, fields },
      ],
      fields,
    );
    expect(value.optim).toEqual({ lr: 0.25, clip: null, betas: [0.9, 0.99], schedule: { kind: "cosine" } });
    expect(value.seed).toBe(7);
    expect(mergeSettings({ a: { b: 1, c: [1, 2] } }, { a: { c: [3] } })).toEqual({ a: { b: 1, c: [3] } });
  });

  it("reports a problem where the value came from: the flag, or the file with its key and line", () => {
    const flagError = leverErrorOf(() =>
      resolveSettings(Schema, [{ kind: "flags", value: { name: "x", optim: { lr: -1 } }, fields }], fields),
    );
    expect(flagError.message).toMatch(/^field "--lr": Too small/);
    const yaml = join(dir, "s.yaml");
    writeFileSync(yaml, "name: x\noptim:\n  lr: 0.1\n  lrr: 3\n");
    const file = readSettingsFile(yaml);
    const unknown = leverErrorOf(() =>
      resolveSettings(Schema, [{ kind: "file", file: yaml, value: file.value, locate: file.locate }], fields),
    );
    expect(unknown.message).toMatch(/s\.yaml, field "optim\.lrr": Unrecognized key.*\(line 4\)/);
    const missing = leverErrorOf(() => resolveSettings(Schema, [{ kind: "flags", value: {}, fields }], fields));
    expect(missing.message).toMatch(/^field "--name"/);
  });

  it("reads YAML with line positions and rejects malformed files with the file's name", () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "a: [1, 2\nb: 3\n");
    expect(leverErrorOf(() => readSettingsFile(bad)).message).toMatch(/bad\.yaml: not valid YAML at line/);
    const dup = join(dir, "dup.yaml");
    writeFileSync(dup, "a: 1\na: 2\n");
    expect(leverErrorOf(() => readSettingsFile(dup)).message).toMatch(/dup\.yaml: not valid YAML/);
    const json = join(dir, "bad.json");
    writeFileSync(json, "{");
    expect(leverErrorOf(() => readSettingsFile(json)).message).toMatch(/bad\.json: not valid JSON/);
  });
});
