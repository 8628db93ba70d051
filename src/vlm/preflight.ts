/**
 * The OpenAI backend's preflight check, run once before a stage sends any work, against every base
 * URL: (1) `GET /v1/models` answers and lists the configured model (the closest served name is
 * suggested); (2) a one-token chat request carrying a small PNG succeeds, so the model takes images
 * and the server accepts them; and, when the stage scores answers, (3) a request with
 * `prompt_logprobs` returns them and, with `answerSpan: "tokenize"`, `/tokenize` works. A failure
 * is one LeverError line naming the URL and the check, instead of every prediction of a run failing
 * the same way after minutes of retries. Each check is retried once, after `retryPauseMs` (the
 * client's first backoff delay), when the failure is transient (connection, 5xx, cut-off JSON) — but not
 * after a timeout: that check already waited `timeoutMs` (the model list: its own short limit,
 * `MODELS_TIMEOUT_MS`), and a second wait would double how long a hung server takes to be reported
 * (docs/vlm.md: about `max(timeoutMs, breakerMs)`).
 */
import { linkedSignal } from "../util/abort.js";
import { LeverError } from "../util/errors.js";
import { type Attempt, type SendContext, sendOnce, sleep } from "./http.js";
import type { VlmFailure } from "./types.js";

/** A 32 × 32 solid-colour PNG: small, yet above the minimum size of common VLM image processors (28 px). */
export const PREFLIGHT_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAAAKklEQVR42mM4YaNBU8QwasGoBaMWjFowasGoBaMWjFowasGoBaMWDBULADahsD1yPRQZAAAAAElFTkSuQmCC";

/** Time limit of the model-list check (the configured `timeoutMs` when that is shorter). */
export const MODELS_TIMEOUT_MS = 10_000;

/** The time limit of the model-list check: the client's, capped at MODELS_TIMEOUT_MS. */
export function modelsTimeout(timeoutMs: number): number {
  return Math.min(timeoutMs, MODELS_TIMEOUT_MS);
}

export interface PreflightSettings {
  /** Server roots (normalised, without /v1). */
  urls: string[];
  model: string;
  extraBody: Record<string, unknown>;
  answerSpan: "tokenize" | "decoded";
  scoring: boolean;
  send: SendContext;
  retryPauseMs: number;
  signal?: AbortSignal;
}

/** Checks every endpoint (concurrently); throws the first failure in URL order. */
export async function preflightOpenAi(settings: PreflightSettings): Promise<void> {
  const scope = linkedSignal(settings.signal, settings.urls.length + 1); // one retry pause per endpoint at most
  try {
    const checks = settings.urls.map((url) => checkEndpoint(url, { ...settings, signal: scope.signal }));
    const results = await Promise.allSettled(checks);
    for (const result of results) if (result.status === "rejected") throw result.reason;
  } finally {
    scope.dispose();
  }
}

async function checkEndpoint(url: string, s: PreflightSettings): Promise<void> {
  // A live server lists its models at once: a short limit, so a server that accepts connections but
  // never answers is reported in seconds (the chat checks keep the full limit).
  const models = await request(url, "GET /v1/models", `${url}/v1/models`, null, {
    ...s,
    send: { ...s.send, timeoutMs: modelsTimeout(s.send.timeoutMs) },
  });
  const served = servedModels(models);
  if (served === null)
    throw new LeverError(`the VLM server at ${url} answered GET /v1/models with something other than a model list`);
  if (!served.includes(s.model)) {
    const list = served.length === 0 ? "no models" : served.slice(0, 5).join(", ") + (served.length > 5 ? ", …" : "");
    const guess = closest(s.model, served);
    throw new LeverError(
      `the VLM server at ${url} does not serve model "${s.model}" (it serves: ${list})${guess ? `; did you mean "${guess}"?` : ""}`,
      { field: "--model" },
    );
  }

  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${PREFLIGHT_PNG}` } };
  const user = { role: "user", content: [image, { type: "text", text: "What colour is this image?" }] };
  const chat = await request(
    url,
    "a chat request with an image",
    `${url}/v1/chat/completions`,
    {
      ...s.extraBody,
      model: s.model,
      messages: [user],
      max_tokens: 1,
      temperature: 0,
    },
    s,
  );
  if (!Array.isArray((chat as { choices?: unknown }).choices))
    throw new LeverError(`the VLM server at ${url} answered a chat request without "choices"`);
  if (!s.scoring) return;

  const scored = await request(
    url,
    "a prompt_logprobs request",
    `${url}/v1/chat/completions`,
    {
      ...s.extraBody,
      model: s.model,
      messages: [user, { role: "assistant", content: "red" }],
      max_tokens: 1,
      temperature: 0,
      prompt_logprobs: 0,
      add_generation_prompt: false,
      continue_final_message: true,
    },
    s,
  );
  const logprobs = (scored as { prompt_logprobs?: unknown }).prompt_logprobs;
  if (!Array.isArray(logprobs) || logprobs.length < 2)
    throw new LeverError(
      `the VLM server at ${url} returns no prompt_logprobs, which scoring answers needs (vLLM's extension of the chat API)`,
    );
  if (s.answerSpan !== "tokenize") return;
  const tokens = await request(
    url,
    "POST /tokenize",
    `${url}/tokenize`,
    {
      model: s.model,
      messages: [{ role: "user", content: [{ type: "text", text: "?" }] }],
      add_generation_prompt: true,
    },
    s,
  );
  if (!Array.isArray((tokens as { tokens?: unknown }).tokens))
    throw new LeverError(
      `the VLM server at ${url} answered POST /tokenize without "tokens" (without /tokenize, set answerSpan to "decoded")`,
    );
}

/** One check's request (retried once when transient, not after a timeout); the parsed JSON or a LeverError naming the check. */
async function request(
  url: string,
  what: string,
  target: string,
  body: object | null,
  s: PreflightSettings,
): Promise<unknown> {
  const bytes = body === null ? null : [Buffer.from(JSON.stringify(body), "utf8")];
  let attempt: Attempt = await sendOnce(s.send, target, bytes, s.signal);
  if (!attempt.ok && attempt.retryable && attempt.failure.reason !== "timeout") {
    await sleep(s.retryPauseMs, s.signal);
    attempt = await sendOnce(s.send, target, bytes, s.signal);
  }
  if (attempt.ok) return attempt.json;
  throw new LeverError(describe(url, what, attempt.failure, s));
}

function describe(url: string, what: string, failure: VlmFailure, s: PreflightSettings): string {
  if (failure.reason === "unreachable")
    return `cannot reach the VLM server at ${url} (${failure.message}); is it running, and is --base-url right?`;
  if (failure.reason === "timeout")
    return `the VLM server at ${url} did not answer ${what} within ${s.send.timeoutMs} ms (raise --timeout-ms if it is only slow)`;
  let hint = "";
  if (failure.reason === "http-4xx" && what === "GET /v1/models")
    hint = " (a server or proxy without /v1/models: --no-preflight skips this check)";
  else if (failure.reason === "http-4xx" && what === "a chat request with an image")
    hint = ` (does "${s.model}" take images, and does the server allow them, e.g. vLLM --limit-mm-per-prompt?)`;
  else if (what === "a prompt_logprobs request") hint = " (scoring answers needs vLLM's prompt_logprobs)";
  else if (what === "POST /tokenize") hint = ' (without /tokenize, set answerSpan to "decoded")';
  return `the VLM server at ${url} failed ${what}: ${failure.reason}: ${failure.message}${hint}`;
}

function servedModels(json: unknown): string[] | null {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return null;
  return data.flatMap((entry) =>
    typeof entry === "object" && entry !== null && typeof (entry as { id?: unknown }).id === "string"
      ? [(entry as { id: string }).id]
      : [],
  );
}

/** The served name closest to `name` (case-insensitive edit distance), or null when none is close. */
export function closest(name: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  if (best === null) return null;
  const related = best.toLowerCase().includes(name.toLowerCase()) || name.toLowerCase().includes(best.toLowerCase());
  return related || bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : null;
}

/** Levenshtein distance (insert, delete, substitute cost 1). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}
