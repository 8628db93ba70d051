/**
 * The VLM a stage talks to, built from the shared VLM settings (src/vlm/settings.ts) by the FACTORIES
 * table, one entry per backend: the simulator (its world file given, or the `world.json` beside a
 * synthetic dataset's files) or the OpenAI-compatible client; wrapped in the workspace's response
 * cache (`cache`: on, off, or auto = the backend's default: servers only).
 * Used by `lever eval`, `lever beams`, `lever rollouts` and online GRPO alike.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CAPTION_WORLD_FILE_FORMAT, SimCaptionVlm } from "../sim/caption/vlm.js";
import { WORLD_FILE } from "../sim/synth.js";
import { SimVlm, WORLD_FILE_FORMAT } from "../sim/vlm.js";
import type { DatasetRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { datasetTask } from "../task/dataset-task.js";
import type { Task } from "../task/types.js";
import { LeverError } from "../util/errors.js";
import { cachedVlm, SqliteResponseCache } from "../vlm/cache.js";
import { DEFAULT_SYSTEM_PROMPT, DEFAULT_ZERO_SHOT_SYSTEM_PROMPT } from "../vlm/layouts.js";
import { OpenAiVlm } from "../vlm/openai-client.js";
import { VQA_MAX_TOKENS } from "../vlm/openai-settings.js";
import { backendSettings, cachedByDefault, type VlmBackend, type VlmSettings } from "../vlm/settings.js";
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

/** Builds one backend from the settings (`sim`: the simulator, which is also the evaluation's oracle). */
type BackendFactory = (settings: VlmSettings, dataset: DatasetRecord, seed: number) => { backend: Vlm; sim?: SimVlm };

/**
 * The simulator a world file describes, by its `format`: a VQA world (lever.synth-world/1) or a caption
 * world (lever.synth-caption-world/1); another format is refused with one line. A file that cannot be
 * read, or has no format, gets the VQA simulator's own error, as before caption worlds existed.
 */
export function simFromWorldFile(path: string): { backend: Vlm; sim?: SimVlm } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    raw = undefined;
  }
  const format = typeof raw === "object" && raw !== null ? (raw as { format?: unknown }).format : undefined;
  if (format === CAPTION_WORLD_FILE_FORMAT) {
    return { backend: SimCaptionVlm.fromWorldFile(path, raw) };
  }
  if (typeof format === "string" && format !== WORLD_FILE_FORMAT)
    throw new LeverError(
      `unknown world file format "${format}" (expected ${WORLD_FILE_FORMAT} or ${CAPTION_WORLD_FILE_FORMAT})`,
      { file: path, field: "format" },
    );
  const sim = SimVlm.fromWorldFile(path);
  return { backend: sim, sim };
}

/** How each backend of src/vlm/settings.ts is built. */
const FACTORIES: Record<VlmBackend, BackendFactory> = {
  sim: (settings, dataset) => simFromWorldFile(resolveWorldFile(settings, dataset)),
  openai: (settings, dataset, seed) => {
    if (settings.baseUrls === undefined || settings.model === undefined)
      throw new LeverError("the openai backend needs --base-url and --model", { field: "--base-url" });
    // Only the client's own settings (callers may pass a larger object, e.g. all of `lever eval`'s options).
    const { vlm: _openai, ...client } = backendSettings({ ...settings, vlm: "openai" as const });
    const task = datasetTask(dataset);
    return {
      backend: new OpenAiVlm(
        { ...client, ...taskDefaults(client, task), seed },
        { prompt: { task: task.name, text: task.prompt.text } },
      ),
    };
  },
};

/**
 * The client's prompt and generation settings for the dataset's task: a setting left at its built-in
 * value (VQA's system prompts and 5 tokens, the schema's defaults) becomes the task's own
 * (src/task/: captions get the caption instruction and 20 tokens); a value the user gave otherwise is
 * kept. VQA's entry holds the same values, so a VQA client is unchanged.
 */
function taskDefaults(client: object, task: Task<unknown>): Record<string, unknown> {
  const given = client as Partial<Record<string, unknown>>;
  const builtIn = (key: string, value: unknown) => given[key] === undefined || given[key] === value;
  return {
    ...(builtIn("systemPrompt", DEFAULT_SYSTEM_PROMPT) ? { systemPrompt: task.prompt.systemPrompt } : {}),
    ...(builtIn("zeroShotSystemPrompt", DEFAULT_ZERO_SHOT_SYSTEM_PROMPT)
      ? { zeroShotSystemPrompt: task.prompt.zeroShotSystemPrompt }
      : {}),
    ...(builtIn("maxTokens", VQA_MAX_TOKENS) ? { maxTokens: task.generation.maxTokens } : {}),
  };
}

export function createVlm(
  ws: Workspace,
  settings: VlmSettings,
  dataset: DatasetRecord,
  options: { seed?: number; wrapBackend?: (backend: Vlm) => Vlm } = {},
): VlmSetup {
  const { backend, sim } = FACTORIES[settings.vlm](settings, dataset, options.seed ?? 0);
  const sent = options.wrapBackend ? options.wrapBackend(backend) : backend;
  const { cache } = settings;
  const useCache = cache === "on" || (cache === "auto" && cachedByDefault(settings.vlm));
  const vlm = useCache ? cachedVlm(sent, new SqliteResponseCache(ws.db), ws.dir) : sent;
  return { vlm, backend, sim };
}
