/**
 * `stream: true`: the upstream's server-sent events reach the client byte for byte (the demonstrations
 * in the response headers), the upstream is sent evaluation's body plus `stream: true`, and an upstream
 * that refuses the stream gives an OpenAI-format error.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeApp, startServer } from "../../src/serve/server.js";
import { prepareServe } from "../../src/serve/startup.js";
import { chatBody, post, type ServeFixture, serveOptions, serveWorkspace } from "./fixture.js";

let f: ServeFixture;
let upstream: Server;
let app: ServeApp;
const received: Record<string, unknown>[] = [];
let refuse = false;

const EVENTS = [
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"two"}}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
  "data: [DONE]\n\n",
];

beforeAll(async () => {
  f = serveWorkspace();
  upstream = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    received.push(body);
    if (refuse) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end('{"object":"error","message":"too many images"}');
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const event of EVENTS) {
      res.write(event);
      await new Promise((done) => setTimeout(done, 20));
    }
    res.end();
  });
  await new Promise<void>((done) => upstream.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  app = await startServer(await prepareServe(f.sim.ws, serveOptions(f, [url], { preflight: false })));
});
afterAll(async () => {
  await app.close();
  upstream.closeAllConnections();
  await new Promise((done) => upstream.close(done));
  f.sim.ws.close();
});

describe("streaming", () => {
  it("passes the upstream's events through unchanged", async () => {
    const item = f.sim.ws.loadItems("val")[4];
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody(f, item, { stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-lever-demonstrations")?.split(",").length).toBe(2);
    expect(res.headers.get("x-lever-checkpoint")).toMatch(/^[0-9a-f]{12}$/);
    expect(await res.text()).toBe(EVENTS.join(""));
    const streamed = received.at(-1)!;
    expect(streamed.stream).toBe(true);
    const select = await post(`${app.url}/v1/select`, {
      question: item.question,
      embedding: (chatBody(f, item).lever as { embedding: number[] }).embedding,
      shots: 2,
    });
    expect(res.headers.get("x-lever-demonstrations")).toBe(
      (select.json.demonstrations as { id: string }[]).map((d) => d.id).join(","),
    );
    const { stream: _stream, ...rest } = streamed;
    expect(rest).toMatchObject({ model: "mock-vl", max_tokens: 5, temperature: 0, n: 1 });
  });

  it("an upstream that refuses the stream: a 502 in OpenAI's error format", async () => {
    refuse = true;
    const reply = await post(
      `${app.url}/v1/chat/completions`,
      chatBody(f, f.sim.ws.loadItems("val")[5], { stream: true }),
    );
    refuse = false;
    expect(reply.status).toBe(502);
    expect((reply.json.error as { message: string }).message).toMatch(/upstream http-400: .*too many images/);
  });
});
