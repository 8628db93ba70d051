import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BeamsSettingsSchema } from "../../src/datagen/beams-stage.js";
import { RolloutsSettingsSchema } from "../../src/datagen/rollouts-stage.js";
import { EvalSettingsSchema } from "../../src/eval/config.js";
import { isOperational, OPERATIONAL, operationalKeys, withoutOperational } from "../../src/util/operational.js";
import { openAiVlmConfigSchema } from "../../src/vlm/openai-settings.js";
import { VlmSettingsSchema } from "../../src/vlm/settings.js";

describe("the operational mark", () => {
  it("is found through optional, default, prefault, nullable, partial and pipes, and only where it was set", () => {
    const marked = z.number().describe("n").meta(OPERATIONAL);
    expect(isOperational(marked)).toBe(true);
    expect(isOperational(marked.optional())).toBe(true);
    expect(isOperational(marked.default(3).nullable())).toBe(true);
    expect(isOperational(marked.transform((n) => n + 1))).toBe(true);
    expect(isOperational(z.number().describe("n"))).toBe(false);
    const schema = z.object({ a: marked, b: z.string(), c: z.boolean().meta(OPERATIONAL) }).strict();
    expect(operationalKeys(schema.partial().optional())).toEqual(["a", "c"]);
    expect(operationalKeys(schema.superRefine(() => {}).prefault({ a: 1, b: "x", c: true }))).toEqual(["a", "c"]);
    expect(withoutOperational(schema, { a: 1, b: "x", c: true })).toEqual({ b: "x" });
  });

  it("marks exactly the VLM settings that change how fast or where answers come, never what they are", () => {
    expect(operationalKeys(VlmSettingsSchema).sort()).toEqual(
      [
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
      ].sort(),
    );
    // The client's own schema also has the seed of its retry jitter.
    expect(operationalKeys(openAiVlmConfigSchema)).toContain("seed");
    expect(operationalKeys(openAiVlmConfigSchema)).not.toContain("answerSpan");
  });

  it("marks the stages' concurrency and the evaluation's batch size", () => {
    expect(operationalKeys(BeamsSettingsSchema)).toEqual(["concurrency"]);
    expect(operationalKeys(RolloutsSettingsSchema)).toEqual(["concurrency"]);
    expect(operationalKeys(EvalSettingsSchema).sort()).toEqual(["batchSize", "concurrency"]);
  });
});
