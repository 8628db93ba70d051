/**
 * An in-process stand-in for vLLM's OpenAI-compatible server (127.0.0.1, random port) that speaks
 * the same shapes: `/v1/chat/completions` (choices[0].message.content, usage, top-level
 * `prompt_logprobs` — leading null, one dict per prompt token keyed by token-id strings, the actual
 * token first plus top-k when `prompt_logprobs` > 0) and `/tokenize` ({count, max_model_len, tokens}).
 * and `GET /v1/models`. A deterministic fake tokenizer and a Qwen-like chat template make the token
 * ids reproducible; a Vicuna-like template (LLaVA-1.5 / Llama family) puts the answer behind a space,
 * so its first token carries it, shown as text (" no"), GPT-2 byte-level ("Ġno") or SentencePiece
 * ("▁no") decoded tokens, and faults (HTTP errors, Retry-After, hangs, malformed JSON, connection resets,
 * a shifted answer span) can be queued per request, applied to every request (`failAll`) or chosen
 * per request by a rule (`faultFor`, e.g. "half of the prompts always fail"). A text-only model and
 * a server without `prompt_logprobs` can be imitated; a refused connection is a closed mock's URL.
 */
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, workerData } from "node:worker_threads";

// ---------------------------------------------------------------------------------------------
// Fake tokenizer

export const SPECIAL_TOKENS: Record<string, number> = {
  "<|endoftext|>": 151643,
  "<|im_start|>": 151644,
  "<|im_end|>": 151645,
  "<|vision_start|>": 151652,
  "<|vision_end|>": 151653,
  "<|image_pad|>": 151655,
};
const SPECIAL_BY_ID = new Map(Object.entries(SPECIAL_TOKENS).map(([text, id]) => [id, text]));
const SPECIAL_SPLIT =
  /(<\|endoftext\|>|<\|im_start\|>|<\|im_end\|>|<\|vision_start\|>|<\|vision_end\|>|<\|image_pad\|>)/;
/** Words keep a leading space (as in byte-level BPE); newlines and other whitespace runs stand alone. */
const PRETOKEN = / ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+/gu;
const PIECE_CHARS = 4;

const pieces = new Map<number, string>();

export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The id of a text piece: a stable hash, so ids do not depend on request order. */
export function pieceId(piece: string): number {
  const special = SPECIAL_TOKENS[piece];
  if (special !== undefined) return special;
  const id = 1000 + (fnv1a(piece) % 150_000);
  const known = pieces.get(id);
  if (known !== undefined && known !== piece) throw new Error(`mock tokenizer collision: ${known} / ${piece}`);
  pieces.set(id, piece);
  return id;
}

export interface Encoded {
  ids: number[];
  /** Character offset where each token starts. */
  starts: number[];
}

/** Special tokens are recognised inside text (as HF tokenizers do); other text is split into ≤4-char pieces. */
export function encode(text: string): Encoded {
  const ids: number[] = [];
  const starts: number[] = [];
  let offset = 0;
  for (const segment of text.split(SPECIAL_SPLIT)) {
    if (segment === "") continue;
    if (SPECIAL_TOKENS[segment] !== undefined) {
      ids.push(SPECIAL_TOKENS[segment]);
      starts.push(offset);
    } else {
      for (const match of segment.matchAll(PRETOKEN)) {
        const chars = [...match[0]];
        let at = offset + match.index;
        for (let c = 0; c < chars.length; c += PIECE_CHARS) {
          const piece = chars.slice(c, c + PIECE_CHARS).join("");
          ids.push(pieceId(piece));
          starts.push(at);
          at += piece.length;
        }
      }
    }
    offset += segment.length;
  }
  return { ids, starts };
}

export function decodeToken(id: number): string {
  const text = SPECIAL_BY_ID.get(id) ?? pieces.get(id);
  if (text === undefined) throw new Error(`mock tokenizer: unknown id ${id}`);
  return text;
}

/** GPT-2 byte-level form of a piece (what older vLLM returned as decoded_token). */
export function byteLevelForm(text: string): string {
  if (SPECIAL_TOKENS[text] !== undefined) return text;
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const shifted = new Map<number, number>();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!printable(b)) shifted.set(b, 256 + n++);
  return [...Buffer.from(text, "utf8")].map((b) => String.fromCodePoint(shifted.get(b) ?? b)).join("");
}

/** Deterministic log-probability of token `id` at prompt position `position`, in [-4.05, -0.05]. */
export function mockLogprob(position: number, id: number): number {
  return -0.05 - (fnv1a(`${position}:${id}`) % 4001) / 1000;
}

export function mockRank(position: number, id: number): number {
  return 1 + (fnv1a(`rank:${position}:${id}`) % 6);
}

// ---------------------------------------------------------------------------------------------
// Chat templates (Qwen2.5-VL; Vicuna as LLaVA-1.5 uses it)

type Part = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
interface Message {
  role: string;
  content: string | Part[];
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function contentText(content: string | Part[], checkImage: (url: string) => void): string {
  if (typeof content === "string") return content;
  return content
    .map((part) => {
      if (part.type === "text") return part.text;
      if (part.type === "image_url") {
        checkImage(part.image_url.url);
        return "<|vision_start|><|image_pad|><|vision_end|>";
      }
      throw new RequestError(400, `unknown content part type ${(part as { type: string }).type}`);
    })
    .join("");
}

export interface Rendered {
  text: string;
  /** Offset where the final message's (stripped) content starts, when continue_final_message. */
  finalContentStart: number | null;
}

export type ChatTemplate = "qwen" | "vicuna";

const VICUNA_ROLES: Record<string, string> = { system: "", user: "USER: ", assistant: "ASSISTANT: " };

/** The whole conversation as the template renders it, before any cut for `continue_final_message`. */
function renderTemplate(
  messages: Message[],
  addGenerationPrompt: boolean,
  template: ChatTemplate,
  checkImage: (url: string) => void,
): string {
  if (template === "vicuna") {
    let text =
      messages[0].role === "system" ? "" : "A chat between a curious human and an artificial intelligence assistant. ";
    for (const m of messages) text += `${VICUNA_ROLES[m.role] ?? `${m.role}: `}${contentText(m.content, checkImage)}\n`;
    return addGenerationPrompt ? `${text}ASSISTANT:` : text;
  }
  let text = messages[0].role === "system" ? "" : "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
  for (const m of messages) text += `<|im_start|>${m.role}\n${contentText(m.content, checkImage)}<|im_end|>\n`;
  return addGenerationPrompt ? `${text}<|im_start|>assistant\n` : text;
}

export function renderChat(
  messages: Message[],
  addGenerationPrompt: boolean,
  continueFinalMessage: boolean,
  checkImage: (url: string) => void = () => {},
  template: ChatTemplate = "qwen",
): Rendered {
  if (!Array.isArray(messages) || messages.length === 0)
    throw new RequestError(400, "messages must be a non-empty list");
  if (addGenerationPrompt && continueFinalMessage)
    throw new RequestError(400, "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  const text = renderTemplate(messages, addGenerationPrompt, template, checkImage);
  if (!continueFinalMessage) return { text, finalContentStart: null };
  // As transformers' apply_chat_template: cut right after the (stripped) final message content.
  const final = contentText(messages[messages.length - 1].content, () => {}).trim();
  const at = text.lastIndexOf(final);
  if (final === "" || at < 0)
    throw new RequestError(400, "continue_final_message: final message not found in rendering");
  return { text: text.slice(0, at + final.length), finalContentStart: at };
}

// ---------------------------------------------------------------------------------------------
// Server

export type Fault =
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "hang" }
  | { kind: "malformed" }
  | { kind: "reset" }
  /** The scored prompt is tokenized with the answer's first piece merged into the preceding "\n". */
  | { kind: "wrong-span" };

export type FaultTarget = "chat" | "tokenize" | "models" | "any";

export interface MockVllmOptions {
  model?: string;
  /** `<|image_pad|>` tokens per image. */
  imageTokens?: number;
  latencyMs?: number;
  /**
   * How `decoded_token`s look: text (recent vLLM), GPT-2 byte-level pieces ("Ġno"), or SentencePiece
   * pieces (spaces as "▁": "▁no").
   */
  decodedStyle?: "text" | "byte-level" | "sentencepiece";
  /**
   * The chat template: `qwen` (Qwen2.5-VL: the answer follows `assistant\n`, its first token has no
   * space) or `vicuna` (LLaVA-1.5 / Llama-family: `USER: … ASSISTANT: answer`, so the first answer
   * token carries the space before it: " no", as BPE and SentencePiece tokenizers both fold it in).
   */
  template?: "qwen" | "vicuna";
  /** Generated text for a generate request (before max_tokens truncation); null = `content: null`. */
  answer?: (messages: Message[]) => string | null;
  /** Directory `file://` images may come from (vLLM --allowed-local-media-path); null = refuse file URLs. */
  allowedLocalMediaPath?: string | null;
  /** Keep request bodies in `log` (disable for benchmarks). */
  keepBodies?: boolean;
  /** A text-only model: requests with images are refused (400), as vLLM does. */
  textOnly?: boolean;
  /** Return `prompt_logprobs` when asked (false: a server that ignores the field). */
  promptLogprobs?: boolean;
}

export interface LoggedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown> | null;
  at: number;
}

export interface ScoreTruth {
  /** Logprobs of the final assistant message's tokens, from the mock's own rendering. */
  answerLogprobs: number[];
  /** The answer tokens' `decoded_token`s, as the server sends them. */
  answerDecoded: string[];
  promptTokens: number;
}

export class MockVllm {
  readonly log: LoggedRequest[] = [];
  /** Final assistant content → the true logprobs of its tokens in the last scored prompt. */
  readonly truth = new Map<string, ScoreTruth>();
  latencyMs: number;
  /** A fault applied to every request (until reset to null). */
  failAll: Fault | null = null;
  /** A rule choosing a fault per request (after `failAll`, before queued faults). */
  faultFor: ((path: string, body: Record<string, unknown> | null) => Fault | null) | null = null;
  inFlight = 0;
  maxInFlight = 0;
  requests = 0;
  private readonly queue: { target: FaultTarget; fault: Fault }[] = [];
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly options: Required<Omit<MockVllmOptions, "answer">> & Pick<MockVllmOptions, "answer">,
  ) {
    this.latencyMs = options.latencyMs;
  }

  static async start(options: MockVllmOptions = {}): Promise<MockVllm> {
    const resolved = {
      model: options.model ?? "mock-vl",
      imageTokens: options.imageTokens ?? 4,
      latencyMs: options.latencyMs ?? 0,
      decodedStyle: options.decodedStyle ?? "text",
      template: options.template ?? "qwen",
      answer: options.answer,
      allowedLocalMediaPath: options.allowedLocalMediaPath ?? null,
      keepBodies: options.keepBodies ?? true,
      textOnly: options.textOnly ?? false,
      promptLogprobs: options.promptLogprobs ?? true,
    };
    let mock: MockVllm | null = null;
    const server = createServer((req, res) => {
      void mock!.handle(req, res);
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    mock = new MockVllm(server, `http://127.0.0.1:${port}`, resolved);
    return mock;
  }

  /** Queues faults for the next matching requests, in order. */
  inject(target: FaultTarget, ...faults: Fault[]): void {
    for (const fault of faults) this.queue.push({ target, fault });
  }

  count(path: string): number {
    return this.log.filter((r) => r.path === path).length;
  }

  clearLog(): void {
    this.log.length = 0;
    this.maxInFlight = 0;
    this.requests = 0;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(path: string, body: Record<string, unknown> | null): Fault | null {
    if (this.failAll !== null) return this.failAll;
    const ruled = this.faultFor?.(path, body) ?? null;
    if (ruled !== null) return ruled;
    const kind: FaultTarget = path === "/tokenize" ? "tokenize" : path === "/v1/models" ? "models" : "chat";
    const index = this.queue.findIndex((q) => q.target === "any" || q.target === kind);
    if (index < 0) return null;
    return this.queue.splice(index, 1)[0].fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on("close", () => this.inFlight--);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? "").split("?")[0];
    let body: Record<string, unknown> | null = null;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      body = null;
    }
    this.log.push({ path, headers: req.headers, body: this.options.keepBodies ? body : null, at: Date.now() });
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));

    const fault = this.takeFault(path, body);
    if (fault?.kind === "hang") {
      this.hanging.add(res);
      return;
    }
    if (fault?.kind === "reset") {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "malformed") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"id":"chatcmpl-mock","object":"chat.comp');
      return;
    }
    if (fault?.kind === "status") {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter;
      res.writeHead(fault.status, headers);
      res.end(JSON.stringify(errorBody(fault.status, `injected fault ${fault.status}`)));
      return;
    }
    try {
      let reply: unknown;
      if (req.method === "GET" && path === "/v1/models") reply = this.models();
      else if (req.method !== "POST") throw new RequestError(405, "method not allowed");
      else if (body === null) throw new RequestError(400, "body is not JSON");
      else if (path === "/v1/chat/completions") reply = this.chat(body, fault?.kind === "wrong-span");
      else if (path === "/tokenize") reply = this.tokenize(body);
      else throw new RequestError(404, `no route ${path}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(reply));
    } catch (error) {
      const status = error instanceof RequestError ? error.status : 500;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(errorBody(status, error instanceof Error ? error.message : String(error))));
    }
  }

  private checkModel(body: Record<string, unknown>): void {
    if (body.model !== undefined && body.model !== this.options.model)
      throw new RequestError(404, `The model \`${String(body.model)}\` does not exist.`);
  }

  /** vLLM's model list: the served model (its `root` is the checkpoint path). */
  private models(): unknown {
    const id = this.options.model;
    return {
      object: "list",
      data: [{ id, object: "model", created: 0, owned_by: "vllm", root: id, parent: null, max_model_len: 32768 }],
    };
  }

  private checkImage = (url: string): void => {
    if (this.options.textOnly)
      throw new RequestError(400, `${this.options.model} is not a multimodal model; images are not supported`);
    // Prefix and base64 length only: a full-string regex over ~1 MB per request slowed the mock down.
    const data = /^data:image\/[a-z]+;base64,/.exec(url);
    if (data !== null) {
      if ((url.length - data[0].length) % 4 !== 0) throw new RequestError(400, "invalid base64 image data");
      return;
    }
    if (url.startsWith("file://")) {
      const root = this.options.allowedLocalMediaPath;
      if (root === null) throw new RequestError(400, "Cannot load local files without `--allowed-local-media-path`.");
      const path = fileURLToPath(url);
      if (!path.startsWith(root)) throw new RequestError(400, `The file path ${path} must be a subpath of ${root}`);
      if (!existsSync(path)) throw new RequestError(400, `No such file: ${path}`);
      return;
    }
    throw new RequestError(400, `unsupported image url ${url.slice(0, 40)}`);
  };

  /** Prompt token ids as the engine sees them: each image placeholder expanded to `imageTokens` pads. */
  private promptTokens(rendered: Rendered, mergeAnswerBoundary: boolean): { ids: number[]; answerFrom: number | null } {
    const { ids, starts } = encode(rendered.text);
    const pad = SPECIAL_TOKENS["<|image_pad|>"];
    const outIds: number[] = [];
    const outStarts: number[] = [];
    ids.forEach((id, i) => {
      const copies = id === pad ? this.options.imageTokens : 1;
      for (let c = 0; c < copies; c++) {
        outIds.push(id);
        outStarts.push(starts[i]);
      }
    });
    let answerFrom: number | null = null;
    if (rendered.finalContentStart !== null) {
      // The token holding the content's first character: it may start earlier, with the space before it.
      const first = rendered.finalContentStart;
      const at = outStarts.findIndex((s) => s >= first);
      answerFrom = at >= 0 && outStarts[at] === first ? at : (at < 0 ? outStarts.length : at) - 1;
      if (mergeAnswerBoundary && answerFrom > 0) {
        const merged = decodeToken(outIds[answerFrom - 1]) + decodeToken(outIds[answerFrom]);
        outIds.splice(answerFrom - 1, 2, pieceId(merged));
        answerFrom -= 1;
      }
    }
    return { ids: outIds, answerFrom };
  }

  private decoded(id: number): string {
    const text = decodeToken(id);
    if (this.options.decodedStyle === "byte-level") return byteLevelForm(text);
    if (this.options.decodedStyle === "sentencepiece" && SPECIAL_TOKENS[text] === undefined)
      return text.replaceAll(" ", "\u2581");
    return text;
  }

  private chat(body: Record<string, unknown>, wrongSpan: boolean): unknown {
    this.checkModel(body);
    const messages = body.messages as Message[];
    const addGenerationPrompt = body.add_generation_prompt === undefined ? true : body.add_generation_prompt === true;
    const continueFinal = body.continue_final_message === true;
    const rendered = renderChat(messages, addGenerationPrompt, continueFinal, this.checkImage, this.options.template);
    const { ids, answerFrom } = this.promptTokens(rendered, wrongSpan);
    const maxTokens = typeof body.max_tokens === "number" ? body.max_tokens : 16;
    const answer = this.options.answer === undefined ? defaultAnswer(messages) : this.options.answer(messages);
    const generated = encode(answer ?? "").ids.slice(0, maxTokens);
    const k = typeof body.prompt_logprobs === "number" && this.options.promptLogprobs ? body.prompt_logprobs : null;
    let promptLogprobs: (Record<string, unknown> | null)[] | null = null;
    if (k !== null) {
      promptLogprobs = ids.map((id, position) => (position === 0 ? null : this.positionLogprobs(position, id, k)));
      if (answerFrom !== null && continueFinal) {
        const final = messages[messages.length - 1];
        this.truth.set(typeof final.content === "string" ? final.content.trim() : "", {
          answerLogprobs: ids.slice(answerFrom).map((id, j) => mockLogprob(answerFrom + j, id)),
          answerDecoded: ids.slice(answerFrom).map((id) => this.decoded(id)),
          promptTokens: ids.length,
        });
      }
    }
    return {
      id: `chatcmpl-mock-${this.requests}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: this.options.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            reasoning_content: null,
            content: answer === null ? null : generated.map(decodeToken).join(""),
            tool_calls: [],
          },
          logprobs: null,
          finish_reason: generated.length >= maxTokens ? "length" : "stop",
          stop_reason: null,
        },
      ],
      usage: {
        prompt_tokens: ids.length,
        total_tokens: ids.length + generated.length,
        completion_tokens: generated.length,
        prompt_tokens_details: null,
      },
      prompt_logprobs: promptLogprobs,
      kv_transfer_params: null,
    };
  }

  /** vLLM's per-position dict: the actual token with its rank, then ranks 1..k (merged if the actual is among them). */
  private positionLogprobs(position: number, id: number, k: number): Record<string, unknown> {
    const actual = {
      logprob: mockLogprob(position, id),
      rank: mockRank(position, id),
      decoded_token: this.decoded(id),
    };
    const entry: Record<string, unknown> = { [String(id)]: actual };
    for (let r = 1; r <= k; r++) {
      if (r === actual.rank) continue;
      const alt = pieceId(`alt${r}`);
      entry[String(alt)] = {
        logprob: actual.logprob + (actual.rank - r) * 0.1,
        rank: r,
        decoded_token: this.decoded(alt),
      };
    }
    return entry;
  }

  private tokenize(body: Record<string, unknown>): unknown {
    this.checkModel(body);
    let ids: number[];
    if (typeof body.prompt === "string") ids = encode(body.prompt).ids;
    else {
      const addGenerationPrompt = body.add_generation_prompt === undefined ? true : body.add_generation_prompt === true;
      const rendered = renderChat(
        body.messages as Message[],
        addGenerationPrompt,
        body.continue_final_message === true,
        this.checkImage,
        this.options.template,
      );
      ids = this.promptTokens(rendered, false).ids;
    }
    return { count: ids.length, max_model_len: 32768, tokens: ids, token_strs: null };
  }
}

function errorBody(status: number, message: string): unknown {
  const type = status === 404 ? "NotFoundError" : status >= 500 ? "InternalServerError" : "BadRequestError";
  return { object: "error", message, type, param: null, code: status };
}

/** A deterministic short answer derived from the last user text. */
function defaultAnswer(messages: Message[]): string {
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const text = lastUser === undefined ? "" : contentText(lastUser.content, () => {});
  const answers = ["yes", "no", "red", "two", "dog", "tennis racket"];
  return answers[fnv1a(text) % answers.length];
}

// ---------------------------------------------------------------------------------------------
// Worker mode: `new Worker(<this module>, { workerData: { mockVllm: options } })` runs the mock on its own
// thread (benchmarks, so server work does not share the client's event loop); it posts `{ url }`.

if (!isMainThread && (workerData as { mockVllm?: MockVllmOptions } | null)?.mockVllm !== undefined) {
  const options = (workerData as { mockVllm: MockVllmOptions }).mockVllm;
  void MockVllm.start(options).then((mock) => {
    parentPort?.postMessage({ url: mock.url });
    parentPort?.on("message", (message: { close?: boolean; stats?: boolean }) => {
      if (message.stats) parentPort?.postMessage({ requests: mock.requests, maxInFlight: mock.maxInFlight });
      if (message.close) void mock.close().then(() => parentPort?.close());
    });
  });
}
