/**
 * The VLM backend settings every stage that talks to a VLM shares (`lever eval`, `lever beams`,
 * `lever rollouts`, online GRPO): the backend, the simulator's world file, the response cache, and
 * every setting of the OpenAI-compatible client. One schema, so the flags, `--vlm-config FILE` and
 * experiment files all take the same keys.
 */
import { z } from "zod";
import { OPERATIONAL } from "../util/operational.js";
import { openAiVlmConfigSchema } from "./openai.js";

export const VLM_BACKENDS = ["sim", "openai"] as const;

/** The fields (an object schema other schemas can spread); `VlmSettingsSchema` adds the cross-field check. */
export const VlmFieldsSchema = z
  .object({
    vlm: z
      .enum(VLM_BACKENDS)
      .default("sim")
      .describe("VLM backend: sim (the built-in simulator) or openai (a vLLM / SGLang OpenAI-compatible server)"),
    world: z
      .string()
      .min(1)
      .optional()
      .describe("synthetic world file for --vlm sim (default: world.json beside the dataset's files)"),
    cache: z
      .enum(["auto", "on", "off"])
      .default("auto")
      .describe(
        "the workspace's response cache, so no request is sent twice: on, off, or auto = on for servers and off for the simulator (whose answers are cheaper to recompute than to look up)",
      )
      .meta(OPERATIONAL),
    ...openAiVlmConfigSchema.omit({ backend: true, seed: true }).partial({ baseUrls: true, model: true }).shape,
  })
  .strict();

/** The openai backend needs servers and a model name. */
export function checkVlmSettings(s: { vlm: string; baseUrls?: string[]; model?: string }, ctx: z.RefinementCtx): void {
  if (s.vlm !== "openai") return;
  if (s.baseUrls === undefined)
    ctx.addIssue({ code: "custom", path: ["baseUrls"], message: "the openai backend needs at least one --base-url" });
  if (s.model === undefined)
    ctx.addIssue({
      code: "custom",
      path: ["model"],
      message: "the openai backend needs --model (the served model name)",
    });
}

export const VlmSettingsSchema = VlmFieldsSchema.superRefine(checkVlmSettings);

export type VlmSettings = z.output<typeof VlmSettingsSchema>;
export type VlmSettingsInput = z.input<typeof VlmSettingsSchema>;
