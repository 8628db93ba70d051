/**
 * The VLM a stage talks to, built from the shared VLM settings (src/vlm/settings.ts): the simulator
 * (its world file given, or the `world.json` beside a synthetic dataset's files) or the
 * OpenAI-compatible client, wrapped in the workspace's response cache (`cache`: on, off, or auto = servers only).
 * Used by `lever eval`, `lever beams`, `lever rollouts` and online GRPO alike.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { WORLD_FILE } from "../sim/synth.js";
import { SimVlm } from "../sim/vlm.js";
import type { DatasetRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";
import { cachedVlm, SqliteResponseCache } from "../vlm/cache.js";
import { OpenAiVlm, openAiVlmConfigSchema } from "../vlm/openai.js";
import type { VlmSettings } from "../vlm/settings.js";
import type { Vlm } from "../vlm/types.js";

/** The VLM of an evaluation, and the simulator's oracle when the backend is `sim`. */
export interface VlmSetup {
  vlm: Vlm;
  /** The backend itself (for ids and stats); `vlm` may be the cache wrapper around it. */
  backend: Vlm;
  sim?: SimVlm;
}

/**
 * `--world` or, for datasets written by `lever data synth`, the `world.json` beside the dataset's
 * source files.
 */
export function resolveWorldFile(settings: Pick<VlmSettings, "world">, dataset: DatasetRecord): string {
  if (settings.world !== undefined) return settings.world;
  for (const file of dataset.files) {
    const candidate = join(dirname(file.path), WORLD_FILE);
    if (existsSync(candidate)) return candidate;
  }
  throw new LeverError(
    `the sim backend needs the synthetic world file: pass --world FILE (no world.json beside the files of dataset "${dataset.name}")`,
    { field: "--world" },
  );
}

export function createVlm(
  ws: Workspace,
  settings: VlmSettings,
  dataset: DatasetRecord,
  options: { seed?: number; wrapBackend?: (backend: Vlm) => Vlm } = {},
): VlmSetup {
  let backend: Vlm;
  let sim: SimVlm | undefined;
  const { vlm: kind, cache, baseUrls, model } = settings;
  if (kind === "sim") {
    sim = SimVlm.fromWorldFile(resolveWorldFile(settings, dataset));
    backend = sim;
  } else {
    if (baseUrls === undefined || model === undefined)
      throw new LeverError("the openai backend needs --base-url and --model", { field: "--base-url" });
    // Only the client's own settings (callers may pass a larger object, e.g. all of `lever eval`'s options).
    const client = Object.fromEntries(
      Object.keys(openAiVlmConfigSchema.shape)
        .filter((key) => key in settings)
        .map((key) => [key, settings[key as keyof VlmSettings]]),
    );
    backend = new OpenAiVlm({ ...client, baseUrls, model, seed: options.seed ?? 0 });
  }
  const sent = options.wrapBackend ? options.wrapBackend(backend) : backend;
  const useCache = cache === "on" || (cache === "auto" && kind !== "sim");
  const vlm = useCache ? cachedVlm(sent, new SqliteResponseCache(ws.db), ws.dir) : sent;
  return { vlm, backend, sim };
}
