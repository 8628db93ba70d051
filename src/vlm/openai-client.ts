/**
 * The `openai` backend's client: a vLLM (or other OpenAI-compatible) chat-completions server, one or
 * many replica base URLs (its settings and model id: src/vlm/openai-settings.ts). `generate` asks for the answer with the reference settings (greedy, 5 tokens);
 * `scoreAnswer` sends the answer as the final, open assistant message with `prompt_logprobs: 0` and
 * sums the log-probabilities of the answer tokens only (docs/vlm.md, "Scoring a given answer").
 *
 * The answer span: by default the answer's token ids come from vLLM `/tokenize` on a minimal
 * two-message probe (same chat template, same `assistant\n` boundary as the real prompt; one pair of
 * calls per distinct answer, memoised), and the last prompt positions of the scored request must
 * carry exactly those ids — so a template or tokenizer surprise fails loudly instead of scoring the
 * wrong tokens. The probe avoids sending the images twice and does not depend on whether `/tokenize`
 * expands image placeholders the way the engine does. `answerSpan: "decoded"` needs no `/tokenize`
 * and instead joins `decoded_token`s back from the end until they spell the answer.
 *
 * Failing servers fail fast: `preflight` checks the servers before a stage starts (src/vlm/preflight.ts),
 * retries are few and short, a failing endpoint cools down, and when every endpoint has been failing
 * for `breakerMs` the circuit breaker refuses further requests (`circuit-open`) so the caller stops
 * (src/vlm/endpoints.ts). Outcomes are reported per request as they arrive (`CallOptions.onResult`).
 */
import { z } from "zod";
import { linkedSignal } from "../util/abort.js";
import { LeverError } from "../util/errors.js";
import { splitUrlCredentials } from "../util/redact.js";
import { Rng } from "../util/rng.js";
import { EndpointPool, type EndpointSnapshot } from "./endpoints.js";
import { type PostContext, type PostResult, postJson } from "./http.js";
import { ImageError, ImageStore } from "./images.js";
import {
  type ChatMessage,
  type ImageRef,
  type LayoutSpec,
  type PromptText,
  promptImages,
  renderMessages,
  renderScoringMessages,
  type TaskPromptText,
  VQA_PROMPT_TEXT,
} from "./layouts.js";
import { type OpenAiVlmConfig, type OpenAiVlmOptions, openAiVlmId, parseOpenAiVlmConfig } from "./openai-settings.js";
import { preflightOpenAi } from "./preflight.js";
import { type PromptLogprobsEntry, spanFromDecodedTokens, spanFromTokenIds } from "./span.js";
import { StatsRecorder, type VlmActivity, type VlmRunStats } from "./stats.js";
import { nodeHttpTransport, type Transport } from "./transport.js";
import {
  type CallOptions,
  type GenerateResult,
  isFailure,
  type Outcome,
  type PreflightOptions,
  type ScoreResult,
  type Vlm,
  type VlmFailure,
  type VlmPrompt,
  vlmFailure,
} from "./types.js";
import { serializeChatBody } from "./wire.js";

/** The server root: trailing slashes and a trailing `/v1` removed (chat is under /v1, /tokenize is not). */
export function normalizeBaseUrl(url: string): string {
  let root = url.trim().replace(/\/+$/, "");
  if (root.endsWith("/v1")) root = root.slice(0, -3).replace(/\/+$/, "");
  return root;
}

/** The transport with each endpoint's basic-auth header (from its URL's user and password) added to its requests. */
function withCredentials(
  transport: Transport,
  urls: readonly string[],
  endpoints: readonly { authorization: string | null }[],
): Transport {
  const auth = urls.flatMap((url, i) => {
    const authorization = endpoints[i].authorization;
    return authorization === null ? [] : [{ url, authorization }];
  });
  if (auth.length === 0) return transport;
  return (url, body, headers, signal) => {
    const match = auth.find((a) => url === a.url || url.startsWith(`${a.url}/`));
    const withAuth =
      match === undefined || headers.authorization !== undefined
        ? headers
        : { ...headers, authorization: match.authorization };
    return transport(url, body, withAuth, signal);
  };
}

const usageSchema = z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number() });
const logprobSchema = z.looseObject({
  logprob: z.number(),
  rank: z.number().nullish(),
  decoded_token: z.string().nullish(),
});
const chatResponseSchema = z.looseObject({
  choices: z.array(z.looseObject({ message: z.looseObject({ content: z.string().nullish() }) })).min(1),
  usage: usageSchema,
  prompt_logprobs: z.array(z.record(z.string(), logprobSchema).nullable()).nullish(),
});
const tokenizeResponseSchema = z.looseObject({ tokens: z.array(z.number().int()), count: z.number().int() });

type ChatResponse = z.output<typeof chatResponseSchema>;

/** Layouts render this key as the image URL; `serializeChatBody` swaps in the real URL bytes. */
const imageKey = (ref: ImageRef): string => ref.path;

/** The minimal conversation the answer is tokenized after (see the module comment). */
const PROBE_MESSAGES: ChatMessage[] = [{ role: "user", content: [{ type: "text", text: "?" }] }];

export class OpenAiVlm implements Vlm {
  readonly id: string;
  readonly config: OpenAiVlmConfig;
  private readonly layout: LayoutSpec;
  /** The task's prompt pieces (VQA's unless the caller names another task's). */
  private readonly text: PromptText;
  private readonly images: ImageStore;
  private readonly pool: EndpointPool;
  private readonly stats = new StatsRecorder();
  private readonly post: PostContext;
  /** The servers' URLs, without credentials. */
  private readonly urls: string[];
  /** Each replica's basic-auth header (from its URL), in `urls` order. */
  private readonly endpoints: { authorization: string | null }[];
  private probePrefix: Promise<number[] | VlmFailure> | null = null;
  private readonly answerIds = new Map<string, Promise<number[] | VlmFailure>>();

  constructor(
    options: OpenAiVlmOptions,
    deps: { transport?: Transport; env?: NodeJS.ProcessEnv; prompt?: TaskPromptText } = {},
  ) {
    this.config = parseOpenAiVlmConfig(options);
    const c = this.config;
    this.text = deps.prompt?.text ?? VQA_PROMPT_TEXT;
    this.layout = { name: c.layout, systemPrompt: c.systemPrompt, zeroShotSystemPrompt: c.zeroShotSystemPrompt };
    this.images = new ImageStore(c.imageUrl, c.imageCacheBytes);
    // A user and password in a URL travel as a header: the URLs the client keeps (and names in errors) have none.
    const endpoints = c.baseUrls.map((u) => splitUrlCredentials(u.trim()));
    this.endpoints = endpoints;
    this.urls = endpoints.map((e) => normalizeBaseUrl(e.url));
    this.pool = new EndpointPool(this.urls, {
      concurrency: c.concurrencyPerEndpoint,
      cooldownAfter: c.cooldownAfterFailures,
      cooldownMs: c.cooldownMs,
      breakerMs: c.breakerMs,
    });
    const headers: Record<string, string> = {};
    if (c.apiKeyEnv !== undefined) {
      const key = (deps.env ?? process.env)[c.apiKeyEnv];
      if (key === undefined || key === "")
        throw new LeverError(`environment variable ${c.apiKeyEnv} is not set`, { field: "apiKeyEnv" });
      headers.authorization = `Bearer ${key}`;
    }
    this.post = {
      pool: this.pool,
      policy: {
        maxRetries: c.maxRetries,
        timeoutMs: c.timeoutMs,
        backoffBaseMs: c.backoffBaseMs,
        backoffMaxMs: c.backoffMaxMs,
        maxRetryAfterMs: c.maxRetryAfterMs,
      },
      rng: new Rng(c.seed).child("vlm-retry-jitter"),
      stats: this.stats,
      headers,
      transport: withCredentials(deps.transport ?? nodeHttpTransport(), this.urls, endpoints),
    };
    this.id = openAiVlmId(c, deps.prompt?.task);
  }

  async generate(prompts: VlmPrompt[], options: CallOptions<GenerateResult> = {}): Promise<Outcome<GenerateResult>[]> {
    return this.runBatch(prompts, (prompt, signal) => this.timed(() => this.generateOne(prompt, signal)), options);
  }

  async scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options: CallOptions<ScoreResult> = {},
  ): Promise<Outcome<ScoreResult>[]> {
    return this.runBatch(requests, (r, signal) => this.timed(() => this.scoreOne(r.prompt, r.answer, signal)), options);
  }

  /** Checks every server before any work (src/vlm/preflight.ts); off with `preflight: false`. */
  async preflight(options: PreflightOptions): Promise<void> {
    if (!this.config.preflight) return;
    await preflightOpenAi({
      urls: this.urls,
      model: this.config.model,
      extraBody: this.config.extraBody,
      answerSpan: this.config.answerSpan,
      scoring: options.scoring,
      send: { headers: this.post.headers, transport: this.post.transport, timeoutMs: this.config.timeoutMs },
      retryPauseMs: this.config.backoffBaseMs,
      signal: options.signal,
    });
  }

  getStats(): VlmRunStats {
    return this.stats.summary();
  }

  endpointHealth(): EndpointSnapshot[] {
    return this.pool.snapshot();
  }

  activity(): VlmActivity {
    const endpoints = this.pool.snapshot();
    const cooling = endpoints.filter((e) => e.coolingForMs > 0);
    return {
      inFlight: endpoints.reduce((n, e) => n + e.inFlight, 0),
      waiting: this.pool.waiting(),
      retrying: this.stats.retrying,
      endpoints: endpoints.length,
      cooling: cooling.length,
      coolingForMs: Math.max(0, ...cooling.map((e) => e.coolingForMs)),
      failingForMs: this.pool.allFailingForMs(),
      breakerMs: this.config.breakerMs,
    };
  }

  /**
   * Runs every item concurrently, bounded by the total endpoint capacity; results in input order,
   * each also handed to `onResult` as it arrives. The caller's signal is linked once per batch
   * (src/util/abort.ts): every waiting request listens on the batch's own signal.
   */
  private async runBatch<T, R>(
    items: T[],
    run: (item: T, signal: AbortSignal) => Promise<Outcome<R>>,
    options: CallOptions<R>,
  ): Promise<Outcome<R>[]> {
    const results = new Array<Outcome<R>>(items.length);
    const width = Math.min(items.length, this.config.concurrencyPerEndpoint * this.config.baseUrls.length);
    // A scoring request waits on two things at once (chat + /tokenize), the shared probe on one more.
    const scope = linkedSignal(options.signal, 2 * width + 2);
    let next = 0;
    const worker = async () => {
      try {
        while (next < items.length) {
          scope.signal.throwIfAborted();
          const index = next++;
          const outcome = await run(items[index], scope.signal);
          results[index] = outcome;
          options.onResult?.(index, outcome);
        }
      } catch (error) {
        scope.abort(error); // the other workers stop too (a caller abort or a failing onResult)
        throw error;
      }
    };
    try {
      await Promise.all(Array.from({ length: width }, worker));
    } finally {
      scope.dispose();
    }
    return results;
  }

  private async timed<T>(call: () => Promise<Outcome<T>>): Promise<Outcome<T>> {
    const start = performance.now();
    const outcome = await call();
    this.stats.recordCall(performance.now() - start, isFailure(outcome) ? outcome : undefined);
    return outcome;
  }

  /**
   * The chat request body `generate` sends for a prompt, as chunks: the layout's messages and the
   * generation settings (`stream: true` added when asked, nothing else changed). `images` supplies the
   * URL literal (JSON string, quotes included) of image paths that are not files, e.g. the data: URL a
   * `lever serve` client sent (`ImageStore.jsonUrl` reads the others). Used by `generate` and by
   * `lever serve`, so a served prompt is byte for byte what evaluation sends.
   */
  async generationBody(
    prompt: VlmPrompt,
    options: { stream?: boolean; images?: ReadonlyMap<string, Buffer> } = {},
  ): Promise<Buffer[] | VlmFailure> {
    const urls = await this.resolveImages(prompt, options.images);
    if (!(urls instanceof Map)) return urls;
    const messages = renderMessages(prompt, this.layout, imageKey, this.text);
    const fields = {
      ...this.config.extraBody,
      model: this.config.model,
      max_tokens: this.config.maxTokens,
      temperature: this.config.temperature,
      n: 1,
      ...(this.config.beamSearch !== undefined ? { use_beam_search: true, best_of: this.config.beamSearch } : {}),
      ...(options.stream === true ? { stream: true } : {}),
    };
    return serializeChatBody(fields, messages, urls);
  }

  /** POSTs a chat body with this client's replicas, retries, per-attempt timeout and breaker; the server's JSON as it came. */
  postChat(body: readonly Uint8Array[], signal?: AbortSignal): Promise<PostResult> {
    return postJson(this.post, "/v1/chat/completions", body, signal);
  }

  /** Each replica's root URL (no credentials) with the headers this client sends it (API key, basic auth). */
  upstreams(): { url: string; headers: Record<string, string> }[] {
    return this.urls.map((url, i) => {
      const { authorization } = this.endpoints[i];
      const headers = { ...this.post.headers };
      if (authorization !== null && headers.authorization === undefined) headers.authorization = authorization;
      return { url, headers };
    });
  }

  private async generateOne(prompt: VlmPrompt, signal?: AbortSignal): Promise<Outcome<GenerateResult>> {
    const body = await this.generationBody(prompt);
    if (!Array.isArray(body)) return body;
    const reply = await this.chat(body, signal);
    if (!reply.ok) return reply.failure;
    const text = reply.response.choices[0].message.content;
    // No answer is not a wrong answer: a failure (counted, never cached, retried by the next run).
    if (text === null || text === undefined || text.trim() === "") {
      const what = text === null || text === undefined ? "a null" : text === "" ? "an empty" : "a blank";
      return vlmFailure("empty-answer", `the server generated ${what} completion`);
    }
    if (text.length > MAX_COMPLETION_CHARS) this.stats.completionsCut++; // said in the run's summary
    return { text: keptCompletion(text), tokens: reply.response.usage.completion_tokens };
  }

  private async scoreOne(prompt: VlmPrompt, answer: string, signal?: AbortSignal): Promise<Outcome<ScoreResult>> {
    const answerText = answer.trim();
    if (answerText === "") return vlmFailure("invalid-request", "empty answer");
    const content = this.config.includeEndOfTurn ? answerText + this.config.endOfTurnToken : answerText;
    const urls = await this.resolveImages(prompt);
    if (!(urls instanceof Map)) return urls;
    const messages = renderScoringMessages(prompt, content, this.layout, imageKey, this.text);
    const fields = {
      ...this.config.extraBody,
      model: this.config.model,
      max_tokens: 1,
      temperature: 0,
      prompt_logprobs: 0,
      add_generation_prompt: false,
      continue_final_message: true,
    };
    const [reply, ids] = await Promise.all([
      this.chat(serializeChatBody(fields, messages, urls), signal),
      this.config.answerSpan === "tokenize" ? this.tokenizeAnswer(content, signal) : Promise.resolve(null),
    ]);
    if (!reply.ok) return reply.failure;
    if (ids !== null && !Array.isArray(ids)) return ids;
    const entries = reply.response.prompt_logprobs as PromptLogprobsEntry[] | null | undefined;
    if (!Array.isArray(entries))
      return vlmFailure("malformed-response", "no prompt_logprobs in the response (does the server support them?)");
    const span = ids === null ? spanFromDecodedTokens(entries, content) : spanFromTokenIds(entries, ids, content);
    if (!span.ok) return vlmFailure("answer-span", span.reason);
    const sum = span.score.logprobs.reduce((a, b) => a + b, 0);
    return { logprobSum: sum, logprobMean: sum / span.score.logprobs.length, tokens: span.score.logprobs.length };
  }

  /** Image URLs (as JSON literals) by `imageKey`, or the failure when an image is missing. */
  private async resolveImages(
    prompt: VlmPrompt,
    given?: ReadonlyMap<string, Buffer>,
  ): Promise<Map<string, Buffer> | VlmFailure> {
    const urls = new Map<string, Buffer>();
    try {
      for (const ref of promptImages(prompt)) {
        const key = imageKey(ref);
        if (!urls.has(key)) urls.set(key, given?.get(key) ?? (await this.images.jsonUrl(ref)));
      }
    } catch (error) {
      if (error instanceof ImageError) return vlmFailure("missing-image", error.message);
      throw error;
    }
    return urls;
  }

  private async chat(
    body: Buffer[],
    signal?: AbortSignal,
  ): Promise<{ ok: true; response: ChatResponse } | { ok: false; failure: VlmFailure }> {
    const result = await postJson(this.post, "/v1/chat/completions", body, signal);
    if (!result.ok) return result;
    const parsed = chatResponseSchema.safeParse(result.json);
    if (!parsed.success)
      return {
        ok: false,
        failure: vlmFailure("malformed-response", `unexpected chat response shape (${describeIssue(parsed.error)})`),
      };
    this.stats.promptTokens += parsed.data.usage.prompt_tokens;
    this.stats.completionTokens += parsed.data.usage.completion_tokens;
    return { ok: true, response: parsed.data };
  }

  private async tokenize(body: object, signal?: AbortSignal): Promise<number[] | VlmFailure> {
    const result = await postJson(this.post, "/tokenize", JSON.stringify(body), signal);
    if (!result.ok) return vlmFailure(result.failure.reason, `/tokenize ${result.failure.message}`);
    const parsed = tokenizeResponseSchema.safeParse(result.json);
    if (!parsed.success)
      return vlmFailure("malformed-response", `unexpected /tokenize response (${describeIssue(parsed.error)})`);
    return parsed.data.tokens;
  }

  /** Token ids of `content` as the final assistant message; memoised per content, failures are not. */
  private tokenizeAnswer(content: string, signal?: AbortSignal): Promise<number[] | VlmFailure> {
    let ids = this.answerIds.get(content);
    if (ids === undefined) {
      ids = this.computeAnswerIds(content, signal);
      this.answerIds.set(content, ids);
      ids.then(
        (value) => !Array.isArray(value) && this.answerIds.delete(content),
        () => this.answerIds.delete(content),
      );
    }
    return ids;
  }

  private async computeAnswerIds(content: string, signal?: AbortSignal): Promise<number[] | VlmFailure> {
    if (this.probePrefix === null) {
      const prefix = this.tokenize(
        { model: this.config.model, messages: PROBE_MESSAGES, add_generation_prompt: true },
        signal,
      );
      this.probePrefix = prefix;
      prefix.then(
        (value) => !Array.isArray(value) && (this.probePrefix = null),
        () => (this.probePrefix = null),
      );
    }
    const [prefix, full] = await Promise.all([
      this.probePrefix,
      this.tokenize(
        {
          model: this.config.model,
          messages: [...PROBE_MESSAGES, { role: "assistant", content }],
          add_generation_prompt: false,
          continue_final_message: true,
        },
        signal,
      ),
    ]);
    if (!Array.isArray(prefix)) return prefix;
    if (!Array.isArray(full)) return full;
    const extendsPrefix = full.length > prefix.length && prefix.every((id, i) => full[i] === id);
    if (!extendsPrefix)
      return vlmFailure(
        "answer-span",
        `/tokenize of the answer ${JSON.stringify(content)} does not extend the generation prompt's tokens`,
      );
    return full.slice(prefix.length);
  }
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue.path.join(".") || "<root>"}: ${issue.message}`;
}

/**
 * The most of a completion that is kept: its first 16 KiB (characters). The answer asked for is a few
 * tokens (`maxTokens`); a server that ignores that can send megabytes, which would otherwise be stored
 * whole — in the response cache, in every prediction (`raw_answer`) and rollout item. The post-processed
 * answer is the text before the first stop word or ", " (docs/vlm.md), so it is the same from the kept
 * part unless it is itself longer, and then it scores 0 either way.
 */
export const MAX_COMPLETION_CHARS = 16 * 1024;

function keptCompletion(text: string): string {
  return text.length > MAX_COMPLETION_CHARS ? text.slice(0, MAX_COMPLETION_CHARS) : text;
}
