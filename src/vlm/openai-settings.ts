/**
 * The `openai` backend's settings (its client is src/vlm/openai-client.ts): the servers, the served
 * model, the prompt layout and system prompts, generation and scoring settings, and how the client
 * talks to the servers (timeouts, retries, back-off, concurrency, the circuit breaker). Settings marked
 * operational (src/util/operational.ts) change how fast or how robustly answers come, never what they
 * are: they are in no identity. The others are in the client's model id (`openAiVlmId`, part of every
 * cached answer's key) and in the identity of every `lever run` stage that asks this backend
 * (src/experiment/identity.ts).
 */
import { z } from "zod";
import { inCanonicalForm } from "../util/canonical-settings.js";
import { LeverError } from "../util/errors.js";
import { hashValue } from "../util/hash.js";
import { OPERATIONAL, withoutOperational } from "../util/operational.js";
import { DEFAULT_SYSTEM_PROMPT, DEFAULT_ZERO_SHOT_SYSTEM_PROMPT, LAYOUT_NAMES } from "./layouts.js";

/** Request fields the client sets itself; `extraBody` may not override them. */
const RESERVED_FIELDS = [
  "model",
  "use_beam_search",
  "best_of",
  "messages",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "n",
  "stream",
  "prompt_logprobs",
  "add_generation_prompt",
  "continue_final_message",
];

/** Generated tokens per VQA answer (the reference used 5; the VQA task's generation setting). */
export const VQA_MAX_TOKENS = 5;

export const openAiVlmConfigSchema = z
  .object({
    backend: z.literal("openai").default("openai").describe("backend name"),
    baseUrls: z
      .array(z.string().regex(/^https?:\/\/[^\s]+$/, "expected an http(s) URL"))
      .min(1)
      .meta({
        flag: "base-url",
        description: "replica servers of the same model, with or without a trailing /v1",
        ...OPERATIONAL,
      }),
    model: z.string().min(1).describe("served model name, as the server lists it under /v1/models"),
    apiKeyEnv: z
      .string()
      .optional()
      .describe("name of the environment variable holding the API key (keys never live in settings files)")
      .meta(OPERATIONAL),
    layout: z.enum(LAYOUT_NAMES).default("lever-plus").describe("prompt layout (docs/vlm.md)"),
    systemPrompt: z.string().nullable().default(DEFAULT_SYSTEM_PROMPT).meta({
      description: "system prompt of few-shot prompts",
      defaultText: "the built-in few-shot prompt (docs/vlm.md)",
    }),
    zeroShotSystemPrompt: z.string().nullable().default(DEFAULT_ZERO_SHOT_SYSTEM_PROMPT).meta({
      description: "system prompt of zero-shot prompts",
      defaultText: "the built-in zero-shot prompt (docs/vlm.md)",
    }),
    imageUrl: z
      .enum(["data", "file"])
      .default("data")
      .describe("how images are sent: data: URLs, or file:// paths (the server needs --allowed-local-media-path)"),
    imageCacheBytes: z
      .number()
      .int()
      .nonnegative()
      .default(512 * 1024 * 1024)
      .describe("bytes of encoded images kept in memory")
      .meta(OPERATIONAL),
    maxTokens: z
      .number()
      .int()
      .positive()
      .default(VQA_MAX_TOKENS)
      .describe("generated tokens per answer (the reference used 5)"),
    temperature: z
      .number()
      .min(0)
      .default(0)
      .meta({ flag: "gen-temperature", description: "sampling temperature of generation (0 = greedy)" }),
    beamSearch: z
      .number()
      .int()
      .min(2)
      .max(16)
      .optional()
      .describe(
        "vLLM beam search: sends use_beam_search with best_of = this width and returns the best beam (Lever-LM evaluates captions with 3); unset: greedy (or sampled at --gen-temperature)",
      ),
    extraBody: z
      .record(z.string(), z.unknown())
      .default({})
      .refine((body) => RESERVED_FIELDS.every((key) => !(key in body)), {
        message: `extraBody may not set ${RESERVED_FIELDS.join(", ")}`,
      })
      .describe('extra request fields for both operations, e.g. {"mm_processor_kwargs": {"max_pixels": 200704}}'),
    answerSpan: z
      .enum(["tokenize", "decoded"])
      .default("tokenize")
      .describe("how the answer tokens are located when scoring: /tokenize ids, or decoded tokens"),
    includeEndOfTurn: z
      .boolean()
      .default(false)
      .describe("also score the end-of-turn token after the answer (Lever-LM scored label + EOS)"),
    endOfTurnToken: z.string().min(1).default("<|im_end|>").describe("the end-of-turn token text"),
    concurrencyPerEndpoint: z
      .number()
      .int()
      .positive()
      .default(8)
      .describe("requests in flight per base URL")
      .meta(OPERATIONAL),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe("per-attempt timeout in milliseconds")
      .meta(OPERATIONAL),
    maxRetries: z.number().int().nonnegative().default(3).describe("retries of a failed request").meta(OPERATIONAL),
    backoffBaseMs: z
      .number()
      .nonnegative()
      .default(500)
      .describe("first retry delay in milliseconds (doubles, with jitter)")
      .meta(OPERATIONAL),
    backoffMaxMs: z
      .number()
      .nonnegative()
      .default(5_000)
      .describe("largest retry delay in milliseconds")
      .meta(OPERATIONAL),
    maxRetryAfterMs: z
      .number()
      .nonnegative()
      .default(60_000)
      .describe("largest Retry-After the client honours, in milliseconds")
      .meta(OPERATIONAL),
    cooldownAfterFailures: z
      .number()
      .int()
      .positive()
      .default(3)
      .describe("consecutive failures after which an endpoint cools down")
      .meta(OPERATIONAL),
    cooldownMs: z
      .number()
      .nonnegative()
      .default(5_000)
      .describe("how long a failing endpoint is left alone, in milliseconds")
      .meta(OPERATIONAL),
    breakerMs: z
      .number()
      .int()
      .positive()
      .default(20_000)
      .describe("stop sending (and stop the run) when every endpoint has been failing this long, in milliseconds")
      .meta(OPERATIONAL),
    preflight: z
      .boolean()
      .default(true)
      .describe("check the servers (model served, images accepted, prompt_logprobs when scoring) before any work")
      .meta(OPERATIONAL),
    seed: z.number().int().default(0).describe("seed of the retry jitter").meta(OPERATIONAL),
  })
  .strict();

export type OpenAiVlmConfig = z.output<typeof openAiVlmConfigSchema>;
export type OpenAiVlmOptions = z.input<typeof openAiVlmConfigSchema>;

/** Parses a config value (from an experiment file) into options, naming the offending field. */
export function parseOpenAiVlmConfig(value: unknown, file?: string): OpenAiVlmConfig {
  const parsed = openAiVlmConfigSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LeverError(issue.message, { file, field: issue.path.join(".") || undefined });
  }
  return parsed.data;
}

/**
 * Identity of the backend + settings that change responses (part of every cache key, and of every
 * evaluation run's identity): every setting not marked operational (src/util/operational.ts; so not the
 * replica URLs), in the grouping the id has always had, so cached answers stay valid — but `answerSpan`:
 * both ways locate the answer's tokens in the same prompt or fail, and failures are never cached, so a
 * cached score holds for either. A setting added since enters only when set to other than its default
 * (src/util/canonical-settings.ts), so adding one keeps every cached answer and evaluation run; should
 * its default change later, name it here so the id changes with it. `schema`: the settings' schema (a
 * test passes one with a setting added).
 */
export function openAiVlmId(c: OpenAiVlmConfig, task?: string, schema: z.ZodObject = openAiVlmConfigSchema): string {
  const {
    layout,
    systemPrompt,
    zeroShotSystemPrompt,
    maxTokens,
    temperature,
    beamSearch,
    extraBody,
    includeEndOfTurn,
    endOfTurnToken,
    answerSpan: _sameTokens,
    backend,
    model,
    imageUrl,
    ...added
  } = withoutOperational(schema, c) as OpenAiVlmConfig & Record<string, unknown>;
  const hash = hashValue({
    backend,
    model,
    imageUrl,
    ...Object.fromEntries(Object.entries(added).filter(([key, value]) => inCanonicalForm(schema.shape[key], value))),
    layout: { name: layout, systemPrompt, zeroShotSystemPrompt },
    generation: { maxTokens, temperature, extraBody, ...(beamSearch !== undefined ? { beamSearch } : {}) },
    ...(task !== undefined && task !== "vqa" ? { task } : {}),
    scoring: { includeEndOfTurn, endOfTurnToken: includeEndOfTurn ? endOfTurnToken : null },
  });
  return `openai:${c.model}:${hash.slice(0, 16)}`;
}
