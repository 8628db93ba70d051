/**
 * Reading and checking requests: the body within its byte limit, JSON, the OpenAI chat request's last
 * user turn (exactly one image, as a data: URL — remote URLs and file paths are refused, never fetched
 * or read —, and the question text), `/v1/select`'s body, a client's own embeddings, and the shot count
 * (`X-Lever-Shots`). Every problem is an HttpError with one line naming the field.
 */
import type { IncomingMessage } from "node:http";
import type { EmbeddingKind } from "../data/embeddings.js";
import { HttpError } from "./errors.js";

/** The request body, refused with 413 once it passes `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(declared, maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge(size, maxBytes);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function tooLarge(size: number, max: number): HttpError {
  return new HttpError(413, `the request body is over the limit of ${max} bytes (${size}+)`, "invalid_request_error");
}

export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new HttpError(400, `the request body is not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new HttpError(400, "the request body must be a JSON object");
  return value as Record<string, unknown>;
}

/** A checked image: its data: URL (as sent), its bytes, and its size. */
export interface RequestImage {
  url: string;
  mime: string;
  bytes: Buffer;
}

const IMAGE_MIMES = new Set(["image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/bmp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Checks an image URL: a base64 data: URL of an image type, within `maxBytes` decoded. */
export function parseImageUrl(url: unknown, maxBytes: number, param: string): RequestImage {
  if (typeof url !== "string" || url.length === 0)
    throw new HttpError(400, `${param} must be a string`, undefined, param);
  if (/^https?:/i.test(url))
    throw new HttpError(
      400,
      "remote image URLs are never fetched: send the image inline as a data: URL",
      undefined,
      param,
    );
  if (!/^data:/i.test(url))
    throw new HttpError(
      400,
      "only data: URLs are accepted for images (no remote URLs, no file paths)",
      undefined,
      param,
    );
  const comma = url.indexOf(",");
  const header = comma < 0 ? url : url.slice(5, comma);
  const parts = header.split(";");
  const mime = parts[0].toLowerCase();
  if (!IMAGE_MIMES.has(mime))
    throw new HttpError(
      400,
      `the data: URL is not an image (${mime || "no type"}); expected image/png, jpeg, gif, webp or bmp`,
      undefined,
      param,
    );
  if (comma < 0 || !parts.includes("base64"))
    throw new HttpError(400, "the image data: URL must be base64 (data:image/…;base64,…)", undefined, param);
  const payload = url.slice(comma + 1);
  const decodedSize = Math.floor((payload.length * 3) / 4);
  if (decodedSize > maxBytes)
    throw new HttpError(413, `the image is ${decodedSize} bytes, over the limit of ${maxBytes}`, undefined, param);
  if (payload.length === 0 || payload.length % 4 !== 0 || !BASE64.test(payload))
    throw new HttpError(400, "the image's base64 data is invalid", undefined, param);
  return { url, mime, bytes: Buffer.from(payload, "base64") };
}

/** What a chat request asks for. */
export interface ChatRequest {
  question: string;
  image: RequestImage;
  stream: boolean;
  /** The client's own embeddings (the `lever` extension field), by kind. */
  embeddings: Partial<Record<EmbeddingKind, number[]>>;
  /** Request fields and messages that do not reach the upstream (the prompt is evaluation's). */
  ignored: string[];
}

/** The fields whose values lever serve uses; every other request field is reported as ignored. */
const USED_CHAT_FIELDS = new Set(["model", "messages", "stream", "lever"]);

export function parseChatRequest(
  body: Record<string, unknown>,
  model: string,
  maxImageBytes: number,
  selectorKind: EmbeddingKind,
): ChatRequest {
  checkModel(body.model, model);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new HttpError(400, "messages must be a non-empty list", undefined, "messages");
  const last = messages[messages.length - 1] as { role?: unknown; content?: unknown } | null;
  if (typeof last !== "object" || last === null || last.role !== "user")
    throw new HttpError(400, "the last message must be the user's (its image and question)", undefined, "messages");
  const { question, image } = userTurn(last.content, maxImageBytes, `messages[${messages.length - 1}].content`);
  if (body.stream !== undefined && typeof body.stream !== "boolean")
    throw new HttpError(400, "stream must be true or false", undefined, "stream");
  const ignored = Object.keys(body).filter((key) => !USED_CHAT_FIELDS.has(key));
  if (messages.length > 1) ignored.push(`messages[0..${messages.length - 2}]`);
  return { question, image, stream: body.stream === true, embeddings: extension(body.lever, selectorKind), ignored };
}

export function checkModel(given: unknown, model: string): void {
  if (given === undefined) return;
  if (given !== model)
    throw new HttpError(
      404,
      `The model \`${String(given)}\` does not exist (this server serves \`${model}\`)`,
      "not_found_error",
      "model",
      "model_not_found",
    );
}

function userTurn(content: unknown, maxImageBytes: number, param: string): { question: string; image: RequestImage } {
  if (typeof content === "string")
    throw new HttpError(
      400,
      "the last user message holds no image: send one image_url part and the question text",
      undefined,
      param,
    );
  if (!Array.isArray(content))
    throw new HttpError(400, "the last user message's content must be a list of parts", undefined, param);
  const images = content.filter((p) => (p as { type?: unknown })?.type === "image_url");
  const texts = content.filter((p) => (p as { type?: unknown })?.type === "text");
  if (images.length + texts.length !== content.length)
    throw new HttpError(400, "content parts must be of type text or image_url", undefined, param);
  if (images.length === 0)
    throw new HttpError(
      400,
      "the last user message holds no image: send one image_url part and the question text",
      undefined,
      param,
    );
  if (images.length > 1)
    throw new HttpError(
      400,
      `the last user message holds ${images.length} images; lever serve answers about one image per request`,
      undefined,
      param,
    );
  const url = (images[0] as { image_url?: { url?: unknown } | string }).image_url;
  const image = parseImageUrl(typeof url === "string" ? url : url?.url, maxImageBytes, `${param}.image_url.url`);
  const question = texts
    .map((p) => (p as { text?: unknown }).text)
    .filter((t): t is string => typeof t === "string")
    .join(" ")
    .trim();
  if (question === "") throw new HttpError(400, "the last user message holds no question text", undefined, param);
  return { question, image };
}

/** `{"embedding": [...]} ` / `{"embeddings": {kind: [...]}}` of the `lever` extension field (or of /v1/select's body). */
export function extension(value: unknown, selectorKind: EmbeddingKind): Partial<Record<EmbeddingKind, number[]>> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null)
    throw new HttpError(400, "lever must be an object", undefined, "lever");
  const v = value as { embedding?: unknown; embeddings?: unknown };
  const out: Partial<Record<EmbeddingKind, number[]>> = {};
  if (v.embeddings !== undefined) {
    if (typeof v.embeddings !== "object" || v.embeddings === null)
      throw new HttpError(400, "embeddings must be an object {kind: [numbers]}", undefined, "embeddings");
    for (const [kind, row] of Object.entries(v.embeddings))
      out[kind as EmbeddingKind] = numbers(row, `embeddings.${kind}`);
  }
  if (v.embedding !== undefined) out[selectorKind] = numbers(v.embedding, "embedding");
  return out;
}

function numbers(row: unknown, param: string): number[] {
  if (!Array.isArray(row) || row.length === 0 || !row.every((x) => typeof x === "number" && Number.isFinite(x)))
    throw new HttpError(400, `${param} must be a non-empty list of finite numbers`, undefined, param);
  return row as number[];
}

/** The shot count: `X-Lever-Shots` (or a body's `shots`), else the server's; 0 = zero-shot. */
export function shotsOf(value: unknown, fallback: number, max: number, param: string): number {
  if (value === undefined) return fallback;
  const n = typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > max)
    throw new HttpError(400, `${param} must be an integer from 0 to ${max}`, undefined, param);
  return n;
}
