/**
 * Forwarding to the upstream VLM server. The request body is the one `lever eval` sends for the prompt
 * (`OpenAiVlm.generationBody`: the layout's messages, the generation settings), with the client's image
 * spliced in as its data: URL. Without streaming it goes through the OpenAI client's own replicas,
 * retries, per-attempt timeout and breaker (`OpenAiVlm.postChat`); with `stream: true` it is sent once
 * to the next replica and the server's event stream is passed through unchanged. Every request is
 * bounded by `requestTimeoutMs`; a failure becomes an OpenAI-format error (HttpError), never a hang.
 *
 * The client's breaker opens for good once every replica has failed for `breakerMs` (right for a batch
 * job, which should stop); a server must recover when the upstream comes back, so an open breaker
 * replaces the client with a fresh one (at most once per `cooldownMs`).
 */
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { OpenAiVlm } from "../vlm/openai-client.js";
import type { OpenAiVlmOptions } from "../vlm/openai-settings.js";
import type { VlmFailure, VlmPrompt } from "../vlm/types.js";
import { HttpError } from "./errors.js";

/** A failure of the OpenAI client as the HTTP error the caller gets. */
export function upstreamError(failure: VlmFailure): HttpError {
  const message = `upstream ${failure.reason}: ${failure.message}`.split("\n")[0];
  switch (failure.reason) {
    case "timeout":
      return new HttpError(504, message, "timeout_error", null, "upstream_timeout");
    case "rate-limited":
      return new HttpError(429, message, "rate_limit_error", null, "upstream_rate_limited");
    case "unreachable":
    case "circuit-open":
      return new HttpError(503, message, "upstream_error", null, "upstream_unavailable");
    case "missing-image":
      return new HttpError(500, `a demonstration's image cannot be read: ${failure.message}`, "server_error");
    default:
      return new HttpError(502, message, "upstream_error", null, "upstream_failed");
  }
}

export class Upstream {
  private client: OpenAiVlm;
  private replacedAt = 0;
  private next = 0;
  private readonly agents = { "http:": new Agent({ keepAlive: true }), "https:": new HttpsAgent({ keepAlive: true }) };

  constructor(
    private readonly options: OpenAiVlmOptions,
    private readonly requestTimeoutMs: number,
  ) {
    this.client = new OpenAiVlm(options);
  }

  get vlm(): OpenAiVlm {
    return this.client;
  }

  get model(): string {
    return this.client.config.model;
  }

  /** The body evaluation sends for `prompt`, with the query image's URL literal under its key. */
  async body(prompt: VlmPrompt, imageKey: string | null, imageUrl: string | null, stream: boolean): Promise<Buffer[]> {
    const images = new Map<string, Buffer>();
    if (imageKey !== null && imageUrl !== null) images.set(imageKey, Buffer.from(`"${imageUrl}"`, "latin1"));
    const body = await this.client.generationBody(prompt, { stream, images });
    if (!Array.isArray(body)) throw upstreamError(body);
    return body;
  }

  /** The upstream's JSON response to `body`, or an HttpError. */
  async complete(body: Buffer[], signal: AbortSignal): Promise<Record<string, unknown>> {
    const client = this.client;
    let result: Awaited<ReturnType<OpenAiVlm["postChat"]>>;
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.requestTimeoutMs)]);
    try {
      result = await client.postChat(body, deadline);
    } catch (error) {
      if (signal.aborted) throw new HttpError(499, "the client closed the request", "invalid_request_error");
      if (deadline.aborted)
        throw new HttpError(
          504,
          `the upstream did not answer within ${this.requestTimeoutMs} ms`,
          "timeout_error",
          null,
          "upstream_timeout",
        );
      throw error;
    }
    if (!result.ok) {
      if (result.failure.reason === "circuit-open") this.renew(client);
      throw upstreamError(result.failure);
    }
    if (typeof result.json !== "object" || result.json === null || Array.isArray(result.json))
      throw new HttpError(
        502,
        "the upstream's response is not a JSON object",
        "upstream_error",
        null,
        "upstream_failed",
      );
    return result.json as Record<string, unknown>;
  }

  /** A fresh client once the breaker opened (at most once per cooldown), so the server recovers with its upstream. */
  private renew(failed: OpenAiVlm): void {
    const now = Date.now();
    if (failed !== this.client || now - this.replacedAt < failed.config.cooldownMs) return;
    this.replacedAt = now;
    this.client = new OpenAiVlm(this.options);
  }

  /**
   * Sends `body` (with `stream: true`) to the next replica and resolves with its response once the
   * status line arrived and is 200; a non-200 answer, a connection error or the deadline is an HttpError.
   */
  stream(body: Buffer[], signal: AbortSignal): Promise<IncomingMessage> {
    const targets = this.client.upstreams();
    const target = targets[this.next++ % targets.length];
    const url = new URL(`${target.url}/v1/chat/completions`);
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.requestTimeoutMs)]);
    const length = body.reduce((n, chunk) => n + chunk.length, 0);
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, {
        method: "POST",
        agent: this.agents[url.protocol as "http:" | "https:"],
        headers: { ...target.headers, "content-type": "application/json", "content-length": String(length) },
        signal: deadline,
      });
      req.on("response", (res) => {
        if (res.statusCode === 200) return resolve(res);
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", () => reject(new HttpError(502, "the upstream's error response broke off", "upstream_error")));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8").slice(0, 300).replace(/\s+/g, " ");
          const status = res.statusCode === 429 ? 429 : 502;
          reject(
            new HttpError(
              status,
              `upstream http-${res.statusCode}: ${text}`,
              "upstream_error",
              null,
              "upstream_failed",
            ),
          );
        });
      });
      req.on("error", (error) => {
        if (signal.aborted) reject(new HttpError(499, "the client closed the request"));
        else if (deadline.aborted)
          reject(
            new HttpError(
              504,
              `the upstream did not answer within ${this.requestTimeoutMs} ms`,
              "timeout_error",
              null,
              "upstream_timeout",
            ),
          );
        else
          reject(
            new HttpError(
              503,
              `upstream unreachable: ${error.message}`,
              "upstream_error",
              null,
              "upstream_unavailable",
            ),
          );
      });
      for (const chunk of body) req.write(chunk);
      req.end();
    });
  }

  /** Whether some replica answers `GET /v1/models` within `timeoutMs`. */
  async reachable(timeoutMs: number): Promise<boolean> {
    const checks = this.client.upstreams().map(
      (target) =>
        new Promise<boolean>((resolve) => {
          const url = new URL(`${target.url}/v1/models`);
          const send = url.protocol === "https:" ? httpsRequest : httpRequest;
          const req = send(
            url,
            { method: "GET", headers: target.headers, signal: AbortSignal.timeout(timeoutMs) },
            (res) => {
              res.resume();
              resolve(res.statusCode === 200);
            },
          );
          req.on("error", () => resolve(false));
          req.end();
        }),
    );
    return (await Promise.all(checks)).some((ok) => ok);
  }

  close(): void {
    this.agents["http:"].destroy();
    this.agents["https:"].destroy();
  }
}
