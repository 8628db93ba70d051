/**
 * The two work routes. `POST /v1/chat/completions`: the query (question, image, embeddings) → the
 * demonstrations → evaluation's prompt → the upstream → its response with the demonstrations under the
 * `lever` key (and in the `X-Lever-Demonstrations` / `X-Lever-Checkpoint` headers; with `stream: true`
 * only there, the events pass through unchanged). `POST /v1/select`: the demonstrations alone.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { EmbeddingKind } from "../data/embeddings.js";
import { VQA_TASK } from "../task/vqa.js";
import type { LeverError } from "../util/errors.js";
import type { AuditEntry, AuditLog } from "./audit.js";
import type { MicroBatcher } from "./batcher.js";
import type { EmbedRequest, QueryEmbeddings } from "./embedder.js";
import { HttpError } from "./errors.js";
import type { ServeMetrics, Step } from "./metrics.js";
import { extension, parseChatRequest, parseImageUrl, type RequestImage, shotsOf } from "./request.js";
import type { Selection, ServedQuery } from "./selection.js";
import type { ServeSetup } from "./startup.js";

/** The image key the query's image is rendered under; its URL is the client's data: URL. */
export const QUERY_IMAGE_KEY = "lever-serve:query-image";

export interface ServeContext {
  setup: ServeSetup;
  metrics: ServeMetrics;
  audit: AuditLog | null;
  selections: MicroBatcher<ServedQuery, Selection>;
  embeddings: MicroBatcher<EmbedRequest, QueryEmbeddings | LeverError> | null;
}

/**
 * What a handler reports for metrics and the audit log, filled in as the request goes: a request that
 * fails after its demonstrations were chosen (say, at the upstream) is logged with them.
 */
export interface Handled {
  timings: Partial<Record<Step, number>>;
  audit: Omit<AuditEntry, "time" | "route" | "status" | "ms">;
}

const { postprocess } = VQA_TASK;

/** Milliseconds of each step, as returned to the client. */
function timingsOf(t: Partial<Record<Step, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(t).map(([step, ms]) => [`${step}_ms`, Math.round(ms * 1000) / 1000]));
}

/** The selection for a question, its image and any embeddings the client sent. */
async function choose(
  ctx: ServeContext,
  question: string,
  image: RequestImage | null,
  given: Partial<Record<EmbeddingKind, number[]>>,
  shots: number,
  timings: Handled["timings"],
): Promise<Selection> {
  const embeddings: QueryEmbeddings = {};
  if (shots > 0) {
    const missing = ctx.setup.kinds.filter(({ kind }) => given[kind] === undefined);
    if (missing.length === 0) {
      for (const { kind, dim } of ctx.setup.kinds) {
        const row = given[kind] as number[];
        if (row.length !== dim)
          throw new HttpError(
            400,
            `the ${kind} embedding has ${row.length} numbers; the index's have ${dim}`,
            undefined,
            "embedding",
          );
        embeddings[kind] = Float32Array.from(row);
      }
    } else if (missing.length < ctx.setup.kinds.length || ctx.embeddings === null) {
      const names = missing.map((m) => m.kind).join(", ");
      throw new HttpError(
        400,
        ctx.embeddings === null
          ? `this server embeds nothing in-process (--client-embeddings): send the request's ${names} embedding ("embedding" is the selector's ${ctx.setup.selection.selector.embedding})`
          : `the request's embeddings miss ${names}: send all of ${ctx.setup.kinds.map((k) => k.kind).join(", ")} or none`,
        undefined,
        "embedding",
      );
    } else {
      if (image === null) throw new HttpError(400, "send an image (data: URL) or the embedding", undefined, "image");
      const started = performance.now();
      const out = await ctx.embeddings.submit({ image: image.bytes, question });
      timings.embed = performance.now() - started;
      if (out instanceof Error) throw new HttpError(400, out.message, undefined, "image");
      Object.assign(embeddings, out);
    }
  }
  const submitted = performance.now();
  const selection = await ctx.selections.submit({
    question,
    imageKey: image === null ? null : QUERY_IMAGE_KEY,
    embeddings,
    shots,
  });
  // Waiting for the batch to start (the batch before it still running) and for its prompts to be built.
  timings.queue = Math.max(0, performance.now() - submitted - selection.poolMs - selection.selectMs);
  timings.pool = selection.poolMs;
  timings.select = selection.selectMs;
  return selection;
}

function leverFields(ctx: ServeContext, selection: Selection, shots: number) {
  return {
    demonstrations: selection.demonstrations,
    shots,
    logprob: selection.logprob,
    checkpoint: ctx.setup.checkpoint.hash,
    selector: ctx.setup.selection.selector.label,
  };
}

/** `X-Lever-Demonstrations` (question ids in prompt order, each URI-encoded, comma-separated) and `X-Lever-Checkpoint`. */
function leverHeaders(ctx: ServeContext, selection: Selection): Record<string, string> {
  return {
    "x-lever-demonstrations": selection.demonstrations.map((d) => encodeURIComponent(d.id)).join(","),
    "x-lever-checkpoint": ctx.setup.checkpoint.hash,
  };
}

function imageAudit(image: RequestImage | null): Handled["audit"]["image"] {
  return image === null
    ? undefined
    : { sha256: createHash("sha256").update(image.bytes).digest("hex"), bytes: image.bytes.length };
}

export async function handleChat(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: Record<string, unknown>,
  signal: AbortSignal,
  out: Handled,
): Promise<void> {
  const { setup } = ctx;
  const chat = parseChatRequest(
    body,
    setup.upstream.model,
    setup.options.maxImageBytes,
    setup.selection.selector.embedding,
  );
  const shots = shotsOf(
    req.headers["x-lever-shots"],
    setup.options.shots,
    Math.min(32, setup.selection.k),
    "X-Lever-Shots",
  );
  const { timings, audit } = out;
  Object.assign(audit, { question: chat.question, image: imageAudit(chat.image), shots });
  const selection = await choose(ctx, chat.question, chat.image, chat.embeddings, shots, timings);
  audit.demonstrations = selection.demonstrations.map((d) => d.id);
  audit.checkpoint = setup.checkpoint.hash;
  const upstreamBody = await setup.upstream.body(selection.prompt, QUERY_IMAGE_KEY, chat.image.url, chat.stream);
  const started = performance.now();
  if (chat.stream) {
    const upstream = await setup.upstream.stream(upstreamBody, signal);
    res.writeHead(200, {
      "content-type": upstream.headers["content-type"] ?? "text/event-stream",
      "cache-control": "no-cache",
      ...leverHeaders(ctx, selection),
    });
    await new Promise<void>((resolve) => {
      upstream.on("data", (chunk: Buffer) => res.write(chunk));
      upstream.on("end", () => resolve());
      upstream.on("error", () => resolve()); // the stream broke off: the client sees it end early
      res.on("close", () => {
        upstream.destroy();
        resolve();
      });
    });
    res.end();
    timings.upstream = performance.now() - started;
    return;
  }
  const json = await setup.upstream.complete(upstreamBody, signal);
  timings.upstream = performance.now() - started;
  const content = (json.choices as { message?: { content?: unknown } }[] | undefined)?.[0]?.message?.content;
  const answer = typeof content === "string" && content.trim() !== "" ? postprocess(content) : null;
  audit.answer = answer;
  send(
    res,
    200,
    {
      ...json,
      lever: { ...leverFields(ctx, selection, shots), answer, timings: timingsOf(timings), ignored: chat.ignored },
    },
    leverHeaders(ctx, selection),
  );
}

export async function handleSelect(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: Record<string, unknown>,
  out: Handled,
): Promise<void> {
  const { setup } = ctx;
  const question = body.question;
  if (typeof question !== "string" || question.trim() === "")
    throw new HttpError(400, "question must be a non-empty string", undefined, "question");
  const image = body.image === undefined ? null : parseImageUrl(body.image, setup.options.maxImageBytes, "image");
  const given = extension(
    { embedding: body.embedding, embeddings: body.embeddings },
    setup.selection.selector.embedding,
  );
  const max = Math.min(32, setup.selection.k);
  const shots = shotsOf(body.shots ?? req.headers["x-lever-shots"], setup.options.shots, max, "shots");
  const { timings, audit } = out;
  Object.assign(audit, { question: question.trim(), image: imageAudit(image), shots });
  const selection = await choose(ctx, question.trim(), image, given, shots, timings);
  audit.demonstrations = selection.demonstrations.map((d) => d.id);
  audit.checkpoint = setup.checkpoint.hash;
  send(res, 200, { ...leverFields(ctx, selection, shots), timings: timingsOf(timings) }, leverHeaders(ctx, selection));
}

export function send(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}
