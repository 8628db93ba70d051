/**
 * The VLM interface (docs/vlm.md). One prompt builder, one post-processor and one scorer serve
 * rollout rewards and evaluation alike, so a reward means what the evaluation measures.
 */

/** One in-context demonstration as shown to the VLM. */
export interface Demonstration {
  questionId: string;
  imagePath: string | null;
  question: string;
  answer: string;
}

/** The question the VLM must answer. */
export interface PromptQuery {
  questionId: string;
  imagePath: string | null;
  question: string;
}

/**
 * A few-shot prompt. `demonstrations` are in prompt order: index 0 is rendered first (leftmost,
 * farthest from the query). Callers decide how selection order maps to prompt order (a recorded setting).
 */
export interface VlmPrompt {
  demonstrations: Demonstration[];
  query: PromptQuery;
}

export interface GenerateResult {
  /** Raw generated text, before answer post-processing. */
  text: string;
  /** Number of generated tokens. */
  tokens: number;
}

export interface ScoreResult {
  /** Sum of the log-probabilities of the answer tokens only. */
  logprobSum: number;
  logprobMean: number;
  /** Number of answer tokens scored. */
  tokens: number;
}

/**
 * Why a request failed. Every reason the code emits, and nothing else (docs/vlm.md lists what each
 * means and which are retried):
 * - `unreachable`: no connection (refused, reset, DNS); `timeout`: no answer in `timeoutMs`;
 * - `rate-limited`: HTTP 429; `http-5xx`; `http-4xx` (not retried); `malformed-response`: not JSON,
 *   or not the expected shape (e.g. no `prompt_logprobs`);
 * - `invalid-request`: the request itself is unusable (an empty answer to score);
 * - `missing-image`: an image file cannot be read (nothing is sent);
 * - `answer-span`: the scored answer's tokens cannot be located in the server's prompt;
 * - `empty-answer`: the server generated an empty (or null, or blank) completion — no answer to score;
 * - `circuit-open`: every endpoint kept failing for `breakerMs`, so the client stopped sending.
 */
export const VLM_FAILURE_REASONS = [
  "unreachable",
  "timeout",
  "rate-limited",
  "http-5xx",
  "http-4xx",
  "malformed-response",
  "invalid-request",
  "missing-image",
  "answer-span",
  "empty-answer",
  "circuit-open",
] as const;

export type VlmFailureReason = (typeof VLM_FAILURE_REASONS)[number];

/** A request that failed after all retries is reported, never silently scored as a wrong answer. */
export interface VlmFailure {
  reason: VlmFailureReason;
  /** One line for people: what failed, where, after how many attempts. */
  message: string;
}

export type Outcome<T> = T | VlmFailure;

export function vlmFailure(reason: VlmFailureReason, message: string): VlmFailure {
  return { reason, message };
}

const REASONS: ReadonlySet<string> = new Set(VLM_FAILURE_REASONS);

/** A failure is an object with exactly a known `reason` and a string `message`. */
export function isFailure<T>(outcome: Outcome<T>): outcome is VlmFailure {
  if (typeof outcome !== "object" || outcome === null) return false;
  const o = outcome as Partial<VlmFailure>;
  return typeof o.reason === "string" && REASONS.has(o.reason) && typeof o.message === "string";
}

/** `reason: message`, the form stored in a prediction's failure column. */
export function formatFailure(failure: VlmFailure): string {
  return `${failure.reason}: ${failure.message}`;
}

export interface CallOptions<T = unknown> {
  signal?: AbortSignal;
  /**
   * Called once per request, as soon as its outcome is known (before the batch resolves), with the
   * outcome the returned array will hold at `index`, so callers can store work as it arrives. A
   * backend may also not call it at all (the caller then uses the returned array). Wrappers that
   * change outcomes must not pass it through unchanged.
   */
  onResult?: (index: number, outcome: Outcome<T>) => void;
}

export interface PreflightOptions {
  /** The stage will score answers (`scoreAnswer`), so check that too. */
  scoring: boolean;
  signal?: AbortSignal;
}

export interface Vlm {
  /** Stable identity of the model + backend + settings, part of every cache key. */
  readonly id: string;
  /** Generates answers for many prompts; results are in input order. */
  generate(prompts: VlmPrompt[], options?: CallOptions<GenerateResult>): Promise<Outcome<GenerateResult>[]>;
  /** Scores given answers (answer tokens only); results are in input order. */
  scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options?: CallOptions<ScoreResult>,
  ): Promise<Outcome<ScoreResult>[]>;
  /** Checks that the backend can do the stage's work before any of it starts; throws a LeverError if not. */
  preflight?(options: PreflightOptions): Promise<void>;
}

/**
 * Runs the backend's preflight check once before a stage's work (a no-op for backends without one,
 * e.g. the simulator). Throws a one-line LeverError naming what failed.
 */
export async function preflight(vlm: Vlm, options: PreflightOptions): Promise<void> {
  await vlm.preflight?.(options);
}
