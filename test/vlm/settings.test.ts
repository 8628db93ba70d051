/**
 * The VLM backends are one table (src/vlm/settings.ts): `--vlm`'s choices and help, the cache
 * default, each backend's own settings and its checks come from it; a stage uses the chosen backend's
 * settings only (`backendSettings`, a union tagged by `vlm`).
 */
import { describe, expect, it } from "vitest";
import {
  backendSettings,
  backendSettingsSchema,
  cachedByDefault,
  VLM_BACKENDS,
  VlmBackendSettingsSchema,
  VlmFieldsSchema,
  VlmSettingsSchema,
} from "../../src/vlm/settings.js";

describe("VLM backend settings", () => {
  it("offers exactly the table's backends, each named in the help", () => {
    expect(VlmFieldsSchema.shape.vlm.unwrap().options).toEqual(VLM_BACKENDS);
    expect(VLM_BACKENDS).toEqual(["sim", "openai"]);
    const help = VlmFieldsSchema.shape.vlm.description as string;
    for (const name of VLM_BACKENDS) expect(help).toContain(`${name} (`);
  });

  it("caches a server's answers by default, not the simulator's", () => {
    expect(cachedByDefault("openai")).toBe(true);
    expect(cachedByDefault("sim")).toBe(false);
  });

  it("runs the chosen backend's checks only", () => {
    expect(VlmSettingsSchema.safeParse({ vlm: "sim" }).success).toBe(true);
    const openai = VlmSettingsSchema.safeParse({ vlm: "openai" });
    expect(openai.success).toBe(false);
    expect(openai.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["baseUrls", "the openai backend needs at least one --base-url"],
      ["model", "the openai backend needs --model (the served model name)"],
    ]);
    expect(
      VlmSettingsSchema.safeParse({ vlm: "openai", baseUrls: ["http://localhost:8000"], model: "qwen" }).success,
    ).toBe(true);
  });

  it("hands a stage the chosen backend's own settings only, tagged with its name", () => {
    const flat = VlmSettingsSchema.parse({ vlm: "sim", world: "w.json", temperature: 0.5, timeoutMs: 10 });
    expect(backendSettings(flat)).toEqual({ vlm: "sim", world: "w.json" });
    const openai = backendSettings({ ...flat, vlm: "openai", baseUrls: ["http://a:1"], model: "m" });
    expect(openai.vlm).toBe("openai");
    expect(openai).toMatchObject({ model: "m", temperature: 0.5, timeoutMs: 10 });
    expect(openai).not.toHaveProperty("world");
    expect(openai).not.toHaveProperty("cache");
    // The union holds one member per backend of the table, with that backend's settings.
    const members = VlmBackendSettingsSchema.options.map((o) => o.shape.vlm.value);
    expect(members).toEqual(VLM_BACKENDS);
    for (const option of VlmBackendSettingsSchema.options)
      expect(Object.keys(option.shape).sort()).toEqual(
        ["vlm", ...Object.keys(backendSettingsSchema(option.shape.vlm.value).shape)].sort(),
      );
  });
});
