/**
 * The VLM backends are one table (src/vlm/settings.ts): `--vlm`'s choices and help, the cache
 * default and each backend's checks come from it.
 */
import { describe, expect, it } from "vitest";
import { cachedByDefault, VLM_BACKENDS, VlmFieldsSchema, VlmSettingsSchema } from "../../src/vlm/settings.js";

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
});
