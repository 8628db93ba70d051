/**
 * The VLM backend settings every stage that talks to a VLM shares (`lever eval`, `lever beams`,
 * `lever rollouts`, online GRPO): the backend, the simulator's world file, the response cache, and
 * every setting of the OpenAI-compatible client. One schema, so the flags, `--vlm-config FILE` and
 * experiment files all take the same keys. The backends are the BACKENDS table below (name, help,
 * cache default, the checks of its settings); each is built by its entry in src/icl/backend.ts.
 */
import { z } from "zod";
import { OPERATIONAL } from "../util/operational.js";
import { openAiVlmConfigSchema } from "./openai-settings.js";

/** Every backend's own settings (`vlm`, which picks the backend, is added in `VlmFieldsSchema`). */
const BackendFieldsSchema = z.object({
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
});
type BackendFields = z.output<typeof BackendFieldsSchema>;

interface BackendEntry {
  /** For `--vlm`'s help. */
  description: string;
  /** Whether `cache: auto` puts the response cache in front of it. */
  cachedByDefault: boolean;
  /** Cross-field checks of its settings: each problem an issue on its field. */
  check?(s: BackendFields, ctx: z.RefinementCtx): void;
}

/** THE VLM backends (built in src/icl/backend.ts, from a table keyed by these names). */
const BACKENDS = {
  sim: { description: "the built-in simulator", cachedByDefault: false },
  openai: {
    description: "a vLLM / SGLang OpenAI-compatible server",
    cachedByDefault: true,
    // Servers and a model name.
    check(s, ctx) {
      if (s.baseUrls === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["baseUrls"],
          message: "the openai backend needs at least one --base-url",
        });
      if (s.model === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["model"],
          message: "the openai backend needs --model (the served model name)",
        });
    },
  },
} satisfies Record<string, BackendEntry>;

export type VlmBackend = keyof typeof BACKENDS;
export const VLM_BACKENDS = Object.keys(BACKENDS) as [VlmBackend, ...VlmBackend[]];

/** Whether `cache: auto` caches this backend's responses. */
export function cachedByDefault(backend: VlmBackend): boolean {
  return BACKENDS[backend].cachedByDefault;
}

/** The fields (an object schema other schemas can spread); `VlmSettingsSchema` adds the cross-field check. */
export const VlmFieldsSchema = z
  .object({
    vlm: z
      .enum(VLM_BACKENDS)
      .default("sim")
      .describe(`VLM backend: ${VLM_BACKENDS.map((name) => `${name} (${BACKENDS[name].description})`).join(" or ")}`),
    ...BackendFieldsSchema.shape,
  })
  .strict();

/** The chosen backend's checks of its settings. */
export function checkVlmSettings(s: BackendFields & { vlm: VlmBackend }, ctx: z.RefinementCtx): void {
  const entry: BackendEntry = BACKENDS[s.vlm];
  entry.check?.(s, ctx);
}

export const VlmSettingsSchema = VlmFieldsSchema.superRefine(checkVlmSettings);

export type VlmSettings = z.output<typeof VlmSettingsSchema>;
export type VlmSettingsInput = z.input<typeof VlmSettingsSchema>;
