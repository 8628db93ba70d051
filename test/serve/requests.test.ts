/**
 * Every bad request the issue lists gets a 4xx in OpenAI's error format with one clear line (no stack
 * trace) and leaves the server answering; `/v1/select` returns the demonstrations in prompt order;
 * `/health` and `/metrics` (Prometheus text).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServeApp } from "../../src/serve/server.js";
import type { MockVllm } from "../helpers/mock-vllm.js";
import { chatBody, jointRow, post, type ServeFixture, serveWorkspace, startServe } from "./fixture.js";

let f: ServeFixture;
let app: ServeApp;
let mock: MockVllm;
const KEY = "s3cret-key";
const auth = { authorization: `Bearer ${KEY}` };

beforeAll(async () => {
  f = serveWorkspace();
  process.env.LEVER_SERVE_TEST_KEY = KEY;
  ({ app, mock } = await startServe(f, {
    authKeyEnv: "LEVER_SERVE_TEST_KEY",
    maxImageBytes: 1000,
    maxBodyBytes: 200_000,
  }));
});
afterAll(async () => {
  await app.close();
  await mock.close();
  f.sim.ws.close();
});

function withContent(content: unknown, extra: Record<string, unknown> = {}) {
  const item = f.sim.ws.loadItems("val")[0];
  return { ...chatBody(f, item), messages: [{ role: "user", content }], ...extra };
}

const valId = (i: number) => f.sim.ws.loadItems("val")[i].questionId;
const png = (b64: string) => ({ type: "image_url", image_url: { url: `data:image/png;base64,${b64}` } });
const text = { type: "text", text: "what is it?" };

describe("bad requests", () => {
  const cases: [string, () => { body: unknown; headers?: Record<string, string> }, number, RegExp][] = [
    ["no image", () => ({ body: withContent([text]) }), 400, /no image/],
    ["a string content (no image)", () => ({ body: withContent("what is it?") }), 400, /no image/],
    ["two images", () => ({ body: withContent([png("AAAA"), png("AAAA"), text]) }), 400, /2 images/],
    ["bad base64", () => ({ body: withContent([png("AA*A!"), text]) }), 400, /base64/],
    ["an image over the limit", () => ({ body: withContent([png("A".repeat(4000)), text]) }), 413, /over the limit/],
    [
      "a non-image data URL",
      () => ({
        body: withContent([{ type: "image_url", image_url: { url: "data:text/plain;base64,aGVsbG8=" } }, text]),
      }),
      400,
      /not an image/,
    ],
    [
      "a remote URL",
      () => ({ body: withContent([{ type: "image_url", image_url: { url: "http://example.com/cat.jpg" } }, text]) }),
      400,
      /remote image URLs are never fetched/,
    ],
    [
      "a file path",
      () => ({ body: withContent([{ type: "image_url", image_url: { url: "file:///etc/passwd" } }, text]) }),
      400,
      /only data: URLs/,
    ],
    ["a missing API key", () => ({ body: withContent([png("AAAA"), text]), headers: {} }), 401, /missing API key/],
    [
      "a wrong API key",
      () => ({ body: withContent([png("AAAA"), text]), headers: { authorization: "Bearer s3cret-kez" } }),
      401,
      /invalid API key/,
    ],
    ["malformed JSON", () => ({ body: '{"model": "mock-vl", "messages": [' }), 400, /not valid JSON/],
    ["an unknown model", () => ({ body: withContent([png("AAAA"), text], { model: "gpt-9" }) }), 404, /does not exist/],
    ["a body over the limit", () => ({ body: withContent([png("A".repeat(300_000)), text]) }), 413, /body is over/],
    [
      "a bad shot count",
      () => ({ body: withContent([png("AAAA"), text]), headers: { ...auth, "x-lever-shots": "99" } }),
      400,
      /X-Lever-Shots/,
    ],
    [
      "an embedding of the wrong width",
      () => ({ body: withContent([png("AAAA"), text], { lever: { embedding: [1, 2, 3] } }) }),
      400,
      /3 numbers/,
    ],
  ];

  for (const [name, make, status, message] of cases)
    it(`${name}: ${status} in OpenAI's error format, one line`, async () => {
      const { body, headers } = make();
      const reply = await post(`${app.url}/v1/chat/completions`, body, headers ?? auth);
      expect(reply.status, reply.text).toBe(status);
      expect(Object.keys(reply.json)).toEqual(["error"]);
      const error = reply.json.error as Record<string, unknown>;
      expect(Object.keys(error).sort()).toEqual(["code", "message", "param", "type"]);
      expect(error.message).toMatch(message);
      expect(String(error.message)).not.toMatch(/\n|\bat .*\.(js|ts):\d+/);
    });

  it("keeps answering after all of them", async () => {
    const item = f.sim.ws.loadItems("val")[2];
    const reply = await post(`${app.url}/v1/chat/completions`, chatBody(f, item), auth);
    expect(reply.status, reply.text).toBe(200);
  });

  it("an unknown route is a 404 in the same format", async () => {
    const reply = await post(`${app.url}/v1/completions`, {}, auth);
    expect(reply.status).toBe(404);
    expect((reply.json.error as { message: string }).message).toMatch(/no route/);
  });
});

describe("/v1/select", () => {
  it("returns the demonstrations in prompt order: the order of the images the upstream is sent", async () => {
    const item = f.sim.ws.loadItems("val")[3];
    const selected = await post(
      `${app.url}/v1/select`,
      { question: item.question, embedding: jointRow(f, item.questionId), shots: 3 },
      auth,
    );
    expect(selected.status, selected.text).toBe(200);
    const demos = selected.json.demonstrations as { id: string; image: string; answer: string; score: number }[];
    expect(demos.length).toBe(3);
    const index = new Map(f.sim.ws.loadItems("train").map((i) => [i.questionId, i]));
    for (const d of demos) {
      expect(d.image).toBe(index.get(d.id)!.imagePath);
      expect(d.answer).toBe(index.get(d.id)!.answer);
      expect(d.score).toBeGreaterThan(-1);
    }
    const chat = await post(`${app.url}/v1/chat/completions`, chatBody(f, item), { ...auth, "x-lever-shots": "3" });
    const body = mock.log.at(-1)!.body as { messages: { content: { type: string; text?: string }[] }[] };
    const shown = body.messages
      .at(-1)!
      .content.filter((p) => p.type === "text")
      .slice(0, 3)
      .map((p) => p.text);
    expect(shown).toEqual(demos.map((d) => `Question:${index.get(d.id)!.question} Short answer:${d.answer}`));
    expect((chat.json.lever as { demonstrations: { id: string }[] }).demonstrations.map((d) => d.id)).toEqual(
      demos.map((d) => d.id),
    );
  });

  const selectCases: [string, () => { body: unknown; headers?: Record<string, string> }, number, RegExp][] = [
    ["no question", () => ({ body: { embedding: jointRow(f, valId(0)) } }), 400, /question must be a non-empty string/],
    [
      "a shot count over the limit",
      () => ({ body: { question: "what?", embedding: jointRow(f, valId(0)), shots: 99 } }),
      400,
      /shots must be an integer from 0 to/,
    ],
    [
      "a negative shot count",
      () => ({ body: { question: "what?", embedding: jointRow(f, valId(0)), shots: -1 } }),
      400,
      /shots must be an integer from 0 to/,
    ],
    [
      "an embedding of the wrong width",
      () => ({ body: { question: "what?", embedding: [1, 2, 3] } }),
      400,
      /3 numbers/,
    ],
    [
      "a remote image URL",
      () => ({ body: { question: "what?", image: "http://example.com/cat.jpg", embedding: jointRow(f, valId(0)) } }),
      400,
      /remote image URLs are never fetched/,
    ],
    ["malformed JSON", () => ({ body: '{"question": ' }), 400, /not valid JSON/],
    ["a missing API key", () => ({ body: { question: "what?" }, headers: {} }), 401, /missing API key/],
  ];
  for (const [name, make, status, message] of selectCases)
    it(`${name}: ${status} in OpenAI's error format, one line`, async () => {
      const { body, headers } = make();
      const reply = await post(`${app.url}/v1/select`, body, headers ?? auth);
      expect(reply.status, reply.text).toBe(status);
      expect(Object.keys(reply.json)).toEqual(["error"]);
      const error = reply.json.error as Record<string, unknown>;
      expect(error.message).toMatch(message);
      expect(String(error.message)).not.toMatch(/\n|\bat .*\.(js|ts):\d+/);
    });

  it("refuses a request without an embedding when nothing is embedded in-process", async () => {
    const reply = await post(`${app.url}/v1/select`, { question: "what?" }, auth);
    expect(reply.status).toBe(400);
    expect((reply.json.error as { message: string }).message).toMatch(/--client-embeddings/);
  });
});

describe("operations", () => {
  it("GET /health: the selector loaded and the upstream reachable", async () => {
    const res = await fetch(`${app.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", upstream: true });
  });

  it("GET /health: 503 while the upstream does not answer, 200 again when it does", async () => {
    mock.failAll = { kind: "status", status: 500 };
    try {
      const down = await fetch(`${app.url}/health`);
      expect(down.status).toBe(503);
      expect(await down.json()).toMatchObject({ status: "upstream unreachable", upstream: false });
    } finally {
      mock.failAll = null;
    }
    expect((await fetch(`${app.url}/health`)).status).toBe(200);
  });

  it("GET /metrics: Prometheus text with requests by route and status, and step histograms", async () => {
    const res = await fetch(`${app.url}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0.0.4/);
    const body = await res.text();
    expect(body).toMatch(/^# TYPE lever_serve_requests_total counter$/m);
    expect(body).toMatch(/^lever_serve_requests_total\{route="chat",status="200"\} \d+$/m);
    expect(body).toMatch(/^lever_serve_errors_total\{route="chat",status="400"\} \d+$/m);
    for (const step of ["pool", "select", "upstream", "total"])
      expect(body).toMatch(
        new RegExp(`^lever_serve_step_seconds_bucket\\{route="chat",step="${step}",le="\\+Inf"\\} \\d+$`, "m"),
      );
    // Every sample line is `name{labels} value` or `name value`, each family declared before its samples.
    for (const line of body.trim().split("\n"))
      expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? [0-9.e+-]+)$/);
  });
});
