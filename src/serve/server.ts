/**
 * The HTTP server of `lever serve` (node:http): routing, the API key, metrics, the audit log, and a
 * graceful stop — `close()` stops accepting connections, lets the requests in flight finish (within
 * `shutdownMs`), then closes what is left. Routes: `POST /v1/chat/completions`, `POST /v1/select`,
 * `GET /v1/models` (key required when one is set), `GET /health`, `GET /metrics` (open).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { LeverError } from "../util/errors.js";
import { AuditLog } from "./audit.js";
import { MicroBatcher } from "./batcher.js";
import { errorResponse, HttpError } from "./errors.js";
import { type Handled, handleChat, handleSelect, type ServeContext, send } from "./handlers.js";
import { ServeMetrics, type Step } from "./metrics.js";
import { parseJsonObject, readBody } from "./request.js";
import { selectBatch } from "./selection.js";
import type { ServeSetup } from "./startup.js";

export interface ServeApp {
  readonly url: string;
  readonly server: Server;
  readonly context: ServeContext;
  /** Requests being handled. */
  inFlight(): number;
  /** Stops accepting, finishes the requests in flight (at most `shutdownMs`), then closes everything. */
  close(): Promise<void>;
}

/** The key clients must send, as a sha256 digest (compared in constant time); null: no key. */
function expectedKey(env: string | undefined): Buffer | null {
  if (env === undefined) return null;
  const key = process.env[env];
  if (key === undefined || key === "")
    throw new LeverError(`environment variable ${env} (the clients' API key) is not set`, { field: "--auth-key-env" });
  return createHash("sha256").update(key).digest();
}

function checkKey(req: IncomingMessage, expected: Buffer | null): void {
  if (expected === null) return;
  const header = req.headers.authorization;
  const match = typeof header === "string" ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
  if (match === null)
    throw new HttpError(
      401,
      "missing API key: send Authorization: Bearer KEY",
      "authentication_error",
      null,
      "invalid_api_key",
    );
  const given = createHash("sha256").update(match[1]).digest();
  if (!timingSafeEqual(given, expected))
    throw new HttpError(401, "invalid API key", "authentication_error", null, "invalid_api_key");
}

export async function startServer(setup: ServeSetup): Promise<ServeApp> {
  const { options } = setup;
  const key = expectedKey(options.authKeyEnv);
  const context: ServeContext = {
    setup,
    metrics: new ServeMetrics(),
    audit: options.auditLog === undefined ? null : new AuditLog(options.auditLog),
    selections: new MicroBatcher(options.maxBatch, (queries) => selectBatch(setup.selection, queries)),
    embeddings:
      setup.embedder === null ? null : new MicroBatcher(options.maxBatch, (items) => setup.embedder!.embed(items)),
  };
  let inFlight = 0;
  let idle: (() => void) | null = null;
  const server = createServer((req, res) => {
    inFlight++;
    context.metrics.inFlight = inFlight;
    void handle(context, key, req, res).finally(() => {
      inFlight--;
      context.metrics.inFlight = inFlight;
      if (inFlight === 0) idle?.();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(new LeverError(`cannot listen on ${options.host}:${options.port}: ${error.message}`)),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${address.port}`,
    server,
    context,
    inFlight: () => inFlight,
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        if (inFlight > 0)
          await Promise.race([
            new Promise<void>((resolve) => (idle = resolve)),
            new Promise((resolve) => setTimeout(resolve, options.shutdownMs).unref()),
          ]);
        server.closeAllConnections();
        await closed;
        setup.upstream.close();
        await context.audit?.close();
        await setup.embedder?.dispose();
      })()),
  };
}

const ROUTES: Record<string, string> = {
  "POST /v1/chat/completions": "chat",
  "POST /v1/select": "select",
  "GET /v1/models": "models",
  "GET /health": "health",
  "GET /metrics": "metrics",
};

async function handle(ctx: ServeContext, key: Buffer | null, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const path = (req.url ?? "/").split("?")[0];
  const route = ROUTES[`${req.method} ${path}`] ?? "other";
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  const handled: Handled = { timings: {}, audit: {} };
  let error: unknown = null;
  try {
    await dispatch(ctx, key, route, req, res, controller.signal, handled);
  } catch (caught) {
    error = caught;
    req.resume(); // an unread body (refused early) is drained, not left in the connection
    const { status, body } = errorResponse(caught);
    if (!res.headersSent) send(res, status, body);
    else res.end();
  }
  const status = res.statusCode;
  const ms = performance.now() - started;
  ctx.metrics.request(route, status);
  if (route === "chat" || route === "select") {
    for (const [step, value] of Object.entries(handled.timings)) ctx.metrics.observe(route, step as Step, value);
    ctx.metrics.observe(route, "total", ms);
    ctx.audit?.write({
      time: new Date().toISOString(),
      route,
      status,
      ...handled.audit,
      ...(error !== null ? { error: errorResponse(error).body.error.message as string } : {}),
      ms: Math.round(ms * 1000) / 1000,
    });
  }
}

async function dispatch(
  ctx: ServeContext,
  key: Buffer | null,
  route: string,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
  handled: Handled,
): Promise<void> {
  if (route === "health") {
    const upstream = await ctx.setup.upstream.reachable(2_000);
    send(res, upstream ? 200 : 503, {
      status: upstream ? "ok" : "upstream unreachable",
      selector: ctx.setup.selection.selector.label,
      checkpoint: ctx.setup.checkpoint.hash,
      upstream,
    });
    return;
  }
  if (route === "metrics") {
    const text = ctx.metrics.render();
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    res.end(text);
    return;
  }
  if (route === "other") {
    req.resume();
    throw new HttpError(
      404,
      `no route ${req.method} ${(req.url ?? "").split("?")[0]}`,
      "not_found_error",
      null,
      "unknown_route",
    );
  }
  checkKey(req, key);
  if (route === "models") {
    send(res, 200, { object: "list", data: [{ id: ctx.setup.upstream.model, object: "model", owned_by: "lever" }] });
    return;
  }
  const body = parseJsonObject(await readBody(req, ctx.setup.options.maxBodyBytes));
  if (route === "chat") await handleChat(ctx, req, res, body, signal, handled);
  else await handleSelect(ctx, req, res, body, handled);
}
