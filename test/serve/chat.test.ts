/**
 * `lever serve` sends the upstream exactly the prompts `lever eval` sends for the same selector, index,
 * pool settings and questions, and returns the same answers (both through the mock vLLM server, with
 * the queries' precomputed embeddings); streaming passes the upstream's events through.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEvalOptions } from "../../src/eval/config.js";
import { evaluate } from "../../src/eval/evaluate.js";
import type { ServeApp } from "../../src/serve/server.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { chatBody, post, type ServeFixture, serveWorkspace, startServe } from "./fixture.js";

let f: ServeFixture;
let app: ServeApp;
let served: MockVllm;
const mocks: MockVllm[] = [];

beforeAll(async () => {
  f = serveWorkspace();
  const started = await startServe(f);
  app = started.app;
  served = started.mock;
  mocks.push(served);
});
afterAll(async () => {
  await app.close();
  await Promise.all(mocks.map((m) => m.close()));
  f.sim.ws.close();
});

/** The generation requests a mock received (not the preflight's probes), as canonical JSON. */
function promptsOf(mock: MockVllm): string[] {
  return mock.log
    .filter((r) => r.path === "/v1/chat/completions" && JSON.stringify(r.body).includes("Short answer:"))
    .map((r) => JSON.stringify(r.body));
}

describe("lever serve against lever eval", () => {
  it("sends the upstream exactly the prompts lever eval sent for the same questions, and returns the same answers", async () => {
    const evalMock = await MockVllm.start();
    mocks.push(evalMock);
    const result = await evaluate(
      f.sim.ws,
      parseEvalOptions({
        dataset: "val",
        index: "train",
        queries: "first:12",
        shots: [2],
        retrievers: [`selector:${f.checkpoint}`],
        vlm: "openai",
        baseUrls: [evalMock.url],
        model: "mock-vl",
        cache: "off",
        resamples: 200,
      }),
      { progress: null },
    );
    expect(result.stats).toMatchObject({ evaluated: 12, failures: 0 });
    const predictions = f.sim.ws.getPredictions(result.runId);
    const items = new Map(f.sim.ws.loadItems("val").map((item) => [item.questionId, item]));
    served.clearLog();
    for (const prediction of predictions) {
      const item = items.get(prediction.questionId)!;
      const reply = await post(`${app.url}/v1/chat/completions`, chatBody(f, item));
      expect(reply.status, reply.text).toBe(200);
      const lever = reply.json.lever as { answer: string; demonstrations: { id: string }[]; shots: number };
      expect(lever.answer).toBe(prediction.answer);
      expect(lever.demonstrations.map((d) => d.id)).toEqual(prediction.demonstrations);
      expect(reply.headers.get("x-lever-demonstrations")).toBe(prediction.demonstrations.join(","));
      expect((reply.json.choices as { message: { content: string } }[])[0].message.content).toBe(prediction.rawAnswer);
    }
    const evalPrompts = promptsOf(evalMock).sort();
    const servedPrompts = promptsOf(served).sort();
    expect(servedPrompts.length).toBe(12);
    expect(servedPrompts).toEqual(evalPrompts);
  });

  it("zero-shot and the shot count by X-Lever-Shots: the prompt has that many demonstrations", async () => {
    const item = f.sim.ws.loadItems("val")[0];
    const zero = await post(`${app.url}/v1/chat/completions`, chatBody(f, item), { "x-lever-shots": "0" });
    expect(zero.status, zero.text).toBe(200);
    expect((zero.json.lever as { demonstrations: unknown[] }).demonstrations).toEqual([]);
    const three = await post(`${app.url}/v1/chat/completions`, chatBody(f, item), { "x-lever-shots": "3" });
    expect((three.json.lever as { demonstrations: unknown[] }).demonstrations.length).toBe(3);
    const body = served.log.at(-1)!.body as { messages: { content: unknown }[] };
    const parts = body.messages.at(-1)!.content as { type: string }[];
    expect(parts.filter((p) => p.type === "image_url").length).toBe(4);
  });

  it("passes a streamed answer through unchanged, the demonstrations in the response header", async () => {
    const item = f.sim.ws.loadItems("val")[1];
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chatBody(f, item, { stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-lever-demonstrations")?.split(",").length).toBe(2);
    const text = await res.text();
    const sent = served.log.at(-1)!.body as { stream?: boolean };
    expect(sent.stream).toBe(true);
    // The mock answers a streamed request with its plain JSON: passed through byte for byte.
    expect(JSON.parse(text).object).toBe("chat.completion");
  });
});
