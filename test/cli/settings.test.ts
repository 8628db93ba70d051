import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { buildProgram } from "../../src/cli/program.js";
import { fieldHelp, formatDefault, settingFields } from "../../src/config/settings.js";
import { EvalSettingsSchema } from "../../src/eval/config.js";
import { GrpoStageConfigSchema, RceStageConfigSchema, RlInputsSchema } from "../../src/train/stage/rl-settings.js";
import { SftConfigSchema } from "../../src/train/stage/sft-run.js";
import { SftInputsSchema } from "../../src/train/stage/sft-stage.js";
import { openAiVlmConfigSchema } from "../../src/vlm/openai-settings.js";
import { VlmSettingsSchema } from "../../src/vlm/settings.js";

function find(path: string[]): Command {
  let command = buildProgram();
  for (const name of path) {
    const next = command.commands.find((c) => c.name() === name);
    if (!next) throw new Error(`no command ${path.join(" ")}`);
    command = next;
  }
  return command;
}

/** Every leaf of `schema` is a flag of `command` whose help shows the description and the default. */
function expectReachable(path: string[], schema: z.ZodType, skip: string[] = []): number {
  const command = find(path);
  const help = command.helpInformation().replace(/\s+/g, " ");
  const fields = settingFields(schema).filter((f) => !skip.includes(f.path.join(".")));
  for (const field of fields) {
    const flag = field.kind === "boolean" && field.default === true ? `--no-${field.flag}` : `--${field.flag}`;
    const option = command.options.find((o) => o.long === flag);
    expect(option, `lever ${path.join(" ")} has no ${flag} for ${field.path.join(".")}`).toBeDefined();
    expect(field.description.length, `${field.path.join(".")} has no description`).toBeGreaterThan(0);
    expect(help).toContain(flag);
    if (flag.startsWith("--no-"))
      expect(help, `${flag} says the setting is on and the flag turns it off`).toContain(
        `on by default; ${flag} turns it off`,
      );
    else if (field.hasDefault)
      expect(help, `${flag} help shows its default`).toContain(
        `(default: ${field.defaultText ?? formatDefault(field.default)})`.replace(/\s+/g, " "),
      );
    expect(help).toContain(fieldHelp(field).replace(/\s+/g, " ").slice(0, 30));
  }
  expect(help, "no --no-<flag> shows (default: true)").not.toMatch(/--no-[a-z-]+ [^-]*\(default: true\)/);
  return fields.length;
}

/** A section's default must be what its fields' defaults give: a partial override keeps the others. */
function expectConsistentDefaults(schema: z.ZodType, required: Record<string, unknown>): void {
  const parsed = schema.parse(required) as Record<string, unknown>;
  for (const field of settingFields(schema)) {
    if (!field.hasDefault) continue;
    const value = field.path.reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], parsed);
    expect(value, `${field.path.join(".")}: the section default disagrees with the field default`).toEqual(
      field.default,
    );
  }
}

describe("settings come from the schemas", () => {
  it("every SFT setting (inputs + config) is a flag with its description and default in --help", () => {
    const n = expectReachable(["train", "sft"], SftInputsSchema.extend(SftConfigSchema.shape));
    expect(n).toBeGreaterThan(30);
    expect(find(["train", "sft"]).options.some((o) => o.long === "--config")).toBe(true);
  });

  it("every RCE and GRPO setting (inputs, config, VLM) is a flag of lever train rce / grpo", () => {
    for (const [stage, schema] of [
      ["rce", RceStageConfigSchema],
      ["grpo", GrpoStageConfigSchema],
    ] as const) {
      expectReachable(["train", stage], RlInputsSchema.extend(schema.shape));
      expectReachable(["train", stage], VlmSettingsSchema);
    }
  });

  it("section defaults agree with their fields' defaults (so a partial override keeps the others)", () => {
    expectConsistentDefaults(SftInputsSchema.extend(SftConfigSchema.shape), { beams: "b", pools: "p", dataset: "d" });
    expectConsistentDefaults(RlInputsSchema.extend(RceStageConfigSchema.shape), { rollouts: "r", dataset: "d" });
    expectConsistentDefaults(RlInputsSchema.extend(GrpoStageConfigSchema.shape), { rollouts: "r", dataset: "d" });
    expectConsistentDefaults(EvalSettingsSchema, { dataset: "d", index: "i" });
    expectConsistentDefaults(VlmSettingsSchema, {});
  });

  it("every evaluation setting and every VLM backend setting is a flag of lever eval", () => {
    expectReachable(["eval"], EvalSettingsSchema);
    expectReachable(["eval"], VlmSettingsSchema);
    // The OpenAI client's own schema: everything but the fixed backend name and the seed (the run's).
    expectReachable(["eval"], openAiVlmConfigSchema.omit({ backend: true, seed: true }));
    const options = find(["eval"]).options.map((o) => o.long);
    expect(options).toContain("--config");
    expect(options).toContain("--vlm-config");
    for (const flag of ["--api-key-env", "--extra-body", "--max-tokens", "--timeout-ms", "--concurrency-per-endpoint"])
      expect(options).toContain(flag);
  });
});
