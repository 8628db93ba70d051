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

/** A request that failed after all retries is reported, never silently scored as a wrong answer. */
export interface VlmFailure {
  error: string;
}

export type Outcome<T> = T | VlmFailure;

export function isFailure<T>(outcome: Outcome<T>): outcome is VlmFailure {
  return typeof outcome === "object" && outcome !== null && "error" in outcome;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface Vlm {
  /** Stable identity of the model + backend + settings, part of every cache key. */
  readonly id: string;
  /** Generates answers for many prompts; results are in input order. */
  generate(prompts: VlmPrompt[], options?: CallOptions): Promise<Outcome<GenerateResult>[]>;
  /** Scores given answers (answer tokens only); results are in input order. */
  scoreAnswer(
    requests: { prompt: VlmPrompt; answer: string }[],
    options?: CallOptions,
  ): Promise<Outcome<ScoreResult>[]>;
}
