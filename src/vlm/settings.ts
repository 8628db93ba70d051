/**
 * The VLM backend settings every stage that talks to a VLM shares (`lever eval`, `lever beams`,
 * `lever rollouts`, online GRPO): the backend, the response cache, and each backend's own settings —
 * the simulator's world file, every setting of the OpenAI-compatible client (src/vlm/openai-settings.ts).
 * The backends are the BACKENDS table below (name, help, cache default, its own settings schema, the
 * checks of its settings); each is built by its entry in src/icl/backend.ts.
 *
 * Two shapes. The flags, `--vlm-config FILE` and experiment files take one flat object (`VlmSettings`:
 * `vlm` and every backend's keys side by side), so one command line serves any backend. What a stage
 * uses is the chosen backend's settings only, tagged with its name (`backendSettings` →
 * `VlmBackendSettings`, a union discriminated by `vlm`): the client is built from it and a stage's
 * identity hashes it (src/experiment/identity.ts), so a simulator stage carries none of the client's
 * settings, and a setting added to one backend changes no identity of another.
 */
import { z } from "zod";
import { OPERATIONAL } from "../util/operational.js";
import { openAiVlmConfigSchema } from "./openai-settings.js";

/** The simulator's own settings. */
const SimSettingsSchema = z
  .object({
    world: z
      .string()
      .min(1)
      .optional()
      .describe("synthetic world file for --vlm sim (default: world.json beside the dataset's files)"),
  })
  .strict();

/** The OpenAI-compatible client's own settings as a stage gives them (the seed of its retry jitter is the stage's). */
const OpenAiSettingsSchema = openAiVlmConfigSchema.omit({ backend: true, seed: true });

/** Every backend's own settings side by side, and the cache (`vlm`, which picks the backend, is added in `VlmFieldsSchema`). */
const BackendFieldsSchema = z.object({
  ...SimSettingsSchema.shape,
  cache: z
    .enum(["auto", "on", "off"])
    .default("auto")
    .describe(
      "the workspace's response cache, so no request is sent twice: on, off, or auto = on for servers and off for the simulator (whose answers are cheaper to recompute than to look up)",
    )
    .meta(OPERATIONAL),
  // Required by the openai backend only: its check says so when it is chosen.
  ...OpenAiSettingsSchema.partial({ baseUrls: true, model: true }).shape,
});
type BackendFields = z.output<typeof BackendFieldsSchema>;

interface BackendEntry {
  /** For `--vlm`'s help. */
  description: string;
  /** Whether `cache: auto` puts the response cache in front of it. */
  cachedByDefault: boolean;
  /** Its own settings (keys of the flat settings): what its client gets and its stages' identities hash. */
  settings: z.ZodObject;
  /** Cross-field checks of its settings: each problem an issue on its field. */
  check?(s: BackendFields, ctx: z.RefinementCtx): void;
}

/** THE VLM backends (built in src/icl/backend.ts, from a table keyed by these names). */
const BACKENDS = {
  sim: { description: "the built-in simulator", cachedByDefault: false, settings: SimSettingsSchema },
  openai: {
    description: "a vLLM / SGLang OpenAI-compatible server",
    cachedByDefault: true,
    settings: OpenAiSettingsSchema,
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

/** One backend's settings tagged with its name: the union of the table's `settings`, discriminated by `vlm`. */
export const VlmBackendSettingsSchema = z.discriminatedUnion("vlm", [
  SimSettingsSchema.extend({ vlm: z.literal("sim") }),
  OpenAiSettingsSchema.extend({ vlm: z.literal("openai") }),
]);
export type VlmBackendSettings = z.output<typeof VlmBackendSettingsSchema>;

/** A backend's own settings schema (without the `vlm` tag). */
export function backendSettingsSchema(backend: VlmBackend): z.ZodObject {
  return BACKENDS[backend].settings;
}

/**
 * The chosen backend's settings out of flat ones (the flags', a file's; callers may pass a larger
 * object, e.g. all of `lever eval`'s options): its own keys only, tagged with its name. Throws a
 * ZodError when the backend's required settings are missing (`VlmSettingsSchema` checks them first).
 */
export function backendSettings<B extends VlmBackend>(
  settings: { vlm: B } & Partial<Omit<VlmSettings, "vlm">>,
): Extract<VlmBackendSettings, { vlm: B }> {
  const own = Object.keys(backendSettingsSchema(settings.vlm).shape).filter((key) => key in settings);
  return VlmBackendSettingsSchema.parse({
    vlm: settings.vlm,
    ...Object.fromEntries(own.map((key) => [key, settings[key as keyof typeof settings]])),
  }) as Extract<VlmBackendSettings, { vlm: B }>;
}
