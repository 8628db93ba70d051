import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { LeverError } from "../../src/util/errors.js";
import { normalizeBaseUrl, OpenAiVlm } from "../../src/vlm/openai-client.js";
import {
  type OpenAiVlmConfig,
  type OpenAiVlmOptions,
  openAiVlmConfigSchema,
  openAiVlmId,
} from "../../src/vlm/openai-settings.js";
import { describeActivity } from "../../src/vlm/stats.js";
import {
  type GenerateResult,
  isFailure,
  type Outcome,
  VLM_FAILURE_REASONS,
  type VlmFailureReason,
  type VlmPrompt,
} from "../../src/vlm/types.js";
import { decodeToken, encode, fnv1a, MockVllm, mockLogprob, SPECIAL_TOKENS } from "../helpers/mock-vllm.js";

let dir: string;
let mock: MockVllm;
const mocks: MockVllm[] = [];

function image(name: string): string {
  const path = join(dir, name);
  writeFileSync(path, Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from(name)]));
  return path;
}

function prompt(shots: number, query = "How many dogs are there?"): VlmPrompt {
  return {
    demonstrations: Array.from({ length: shots }, (_, i) => ({
      questionId: `d${i}`,
      imagePath: join(dir, `d${i}.jpg`),
      question: `What is shown in picture ${i}?`,
      answer: i % 2 === 0 ? "a cat" : "two",
    })),
    query: { questionId: "q1", imagePath: join(dir, "q.jpg"), question: query },
  };
}

function client(options: Partial<OpenAiVlmOptions> = {}, urls = [mock.url]): OpenAiVlm {
  return new OpenAiVlm({
    baseUrls: urls,
    model: "mock-vl",
    timeoutMs: 2000,
    backoffBaseMs: 5,
    backoffMaxMs: 20,
    cooldownMs: 50,
    ...options,
  });
}

async function startMock(options: Parameters<typeof MockVllm.start>[0] = {}): Promise<MockVllm> {
  const m = await MockVllm.start(options);
  mocks.push(m);
  return m;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lever-vlm-"));
  for (let i = 0; i < 4; i++) image(`d${i}.jpg`);
  image("q.jpg");
  mock = await startMock({ allowedLocalMediaPath: dir });
});

afterEach(() => {
  mock.failAll = null;
  mock.latencyMs = 0;
  mock.clearLog();
});

afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe("generate", () => {
  it("sends the reference settings and returns the text and completion tokens", async () => {
    const vlm = client();
    const [result] = await vlm.generate([prompt(2)]);
    expect(result).toEqual({ text: expect.any(String), tokens: expect.any(Number) });
    const body = mock.log[0].body as Record<string, unknown>;
    expect(mock.log[0].path).toBe("/v1/chat/completions");
    expect(body).toMatchObject({ model: "mock-vl", max_tokens: 5, temperature: 0, n: 1 });
    const content = (body.messages as { role: string; content: { type: string; image_url?: { url: string } }[] }[])[1]
      .content;
    expect(content.filter((p) => p.type === "image_url")).toHaveLength(3);
    expect(content[0].image_url?.url).toMatch(/^data:image\/jpeg;base64,/);
  });

  it("truncates at max_tokens like the server does and reports the generated token count", async () => {
    const long = await startMock({ answer: () => "a very long answer that keeps going on and on" });
    const vlm = client({ maxTokens: 3 }, [long.url]);
    const [result] = await vlm.generate([prompt(1)]);
    const expected = encode("a very long answer that keeps going on and on").ids.slice(0, 3).map(decodeToken).join("");
    expect(result).toEqual({ text: expected, tokens: 3 });
  });

  it("fails an empty, blank or null completion as empty-answer (counted, never a 0-accuracy answer)", async () => {
    const replies = new Map<string, string | null>([
      ["Question:E? Short answer:", ""],
      ["Question:B? Short answer:", "  \n"],
      ["Question:N? Short answer:", null],
    ]);
    const m = await startMock({
      answer: (messages) => {
        const parts = messages.at(-1)!.content as { type: string; text?: string }[];
        const reply = replies.get(parts.at(-1)!.text!);
        return reply === undefined ? "yes" : reply;
      },
    });
    const vlm = client({}, [m.url]);
    const results = await vlm.generate([prompt(0, "E?"), prompt(0, "B?"), prompt(0, "N?"), prompt(0, "Y?")]);
    expect(results).toEqual([
      { reason: "empty-answer", message: "the server generated an empty completion" },
      { reason: "empty-answer", message: "the server generated a blank completion" },
      { reason: "empty-answer", message: "the server generated a null completion" },
      { text: "yes", tokens: 1 },
    ]);
    expect(vlm.getStats().failures.byReason).toEqual({ "empty-answer": 3 });
  });

  it("returns results in input order for a batch", async () => {
    const answers = new Map([
      ["Question:A? Short answer:", "alpha"],
      ["Question:B? Short answer:", "beta"],
    ]);
    const m = await startMock({
      answer: (messages) => {
        const parts = messages.at(-1)!.content as { type: string; text?: string }[];
        return answers.get(parts.at(-1)!.text!) ?? "?";
      },
      latencyMs: 5,
    });
    const vlm = client({}, [m.url]);
    const results = await vlm.generate([prompt(0, "A?"), prompt(0, "B?"), prompt(0, "A?")]);
    expect(results.map((r) => (isFailure(r) ? r.message : r.text))).toEqual(["alpha", "beta", "alpha"]);
  });

  it("sends file:// URLs in file mode", async () => {
    const vlm = client({ imageUrl: "file" });
    const [result] = await vlm.generate([prompt(1)]);
    expect(isFailure(result)).toBe(false);
    const body = mock.log[0].body as { messages: { content: { image_url?: { url: string } }[] }[] };
    expect(body.messages[1].content[0].image_url?.url).toBe(`file://${join(dir, "d0.jpg")}`);
  });

  it("fails a request with a missing image naming question and path, without calling the server", async () => {
    const vlm = client();
    const p = prompt(1);
    p.demonstrations[0] = { ...p.demonstrations[0], questionId: "4711", imagePath: join(dir, "nope.jpg") };
    const [bad, good] = await vlm.generate([p, prompt(1)]);
    expect(bad).toEqual({
      reason: "missing-image",
      message: expect.stringMatching(/^image for question "4711" cannot be read: .*nope\.jpg \(ENOENT\)/),
    });
    expect(isFailure(good)).toBe(false);
    expect(mock.count("/v1/chat/completions")).toBe(1);
    expect(vlm.getStats().failures.byReason).toEqual({ "missing-image": 1 });
  });
});

describe("scoreAnswer", () => {
  it("sums exactly the answer tokens of a multi-token answer (checked against the server's own rendering)", async () => {
    const vlm = client();
    const [result] = await vlm.scoreAnswer([{ prompt: prompt(2), answer: " tennis racket " }]);
    const truth = mock.truth.get("tennis racket")!;
    expect(truth.answerLogprobs.length).toBeGreaterThan(1);
    const sum = truth.answerLogprobs.reduce((a, b) => a + b, 0);
    expect(result).toEqual({
      logprobSum: expect.closeTo(sum, 12),
      logprobMean: expect.closeTo(sum / truth.answerLogprobs.length, 12),
      tokens: truth.answerLogprobs.length,
    });
    const chat = mock.log.find((r) => r.path === "/v1/chat/completions")!.body as Record<string, unknown>;
    expect(chat).toMatchObject({
      continue_final_message: true,
      add_generation_prompt: false,
      prompt_logprobs: 0,
      max_tokens: 1,
      temperature: 0,
    });
    expect((chat.messages as unknown[]).at(-1)).toEqual({ role: "assistant", content: "tennis racket" });
  });

  it("hand-checks a one-token answer: its logprob is the mock's value at the last prompt position", async () => {
    const vlm = client();
    const [result] = await vlm.scoreAnswer([{ prompt: prompt(0), answer: "red" }]);
    const truth = mock.truth.get("red")!;
    const redId = encode("red").ids[0];
    expect(result).toEqual({
      logprobSum: mockLogprob(truth.promptTokens - 1, redId),
      logprobMean: expect.any(Number),
      tokens: 1,
    });
  });

  it("tokenizes the generation-prompt probe once and each distinct answer once", async () => {
    const vlm = client();
    await vlm.scoreAnswer([
      { prompt: prompt(1), answer: "red" },
      { prompt: prompt(2), answer: "red" },
      { prompt: prompt(3), answer: "blue" },
    ]);
    expect(mock.count("/tokenize")).toBe(3); // prefix probe + "red" + "blue"
    expect(mock.count("/v1/chat/completions")).toBe(3);
  });

  it("scores the end-of-turn token too when asked", async () => {
    const vlm = client({ includeEndOfTurn: true });
    const [result] = await vlm.scoreAnswer([{ prompt: prompt(1), answer: "two" }]);
    const truth = mock.truth.get("two<|im_end|>")!;
    expect(truth.answerLogprobs).toHaveLength(2);
    expect(result).toMatchObject({
      tokens: 2,
      logprobSum: expect.closeTo(truth.answerLogprobs[0] + truth.answerLogprobs[1], 12),
    });
    expect(vlm.id).not.toBe(client().id);
  });

  it("finds the same span from decoded tokens alone (no /tokenize), also from a byte-level server", async () => {
    const byteLevel = await startMock({ decodedStyle: "byte-level" });
    for (const m of [mock, byteLevel]) {
      const vlm = client({ answerSpan: "decoded" }, [m.url]);
      const [result] = await vlm.scoreAnswer([{ prompt: prompt(2), answer: "tennis racket" }]);
      const truth = m.truth.get("tennis racket")!;
      expect(result).toMatchObject({ tokens: truth.answerLogprobs.length });
      expect(m.count("/tokenize")).toBe(0);
    }
  });

  it("scores answers whose first token carries the space before them, with BPE and SentencePiece tokenizers", async () => {
    const servers = [
      { template: "vicuna", decodedStyle: "text", first: " no" },
      { template: "vicuna", decodedStyle: "byte-level", first: "\u0120no" },
      { template: "vicuna", decodedStyle: "sentencepiece", first: "\u2581no" },
      { template: "qwen", decodedStyle: "sentencepiece", first: "no" },
    ] as const;
    for (const { template, decodedStyle, first } of servers) {
      const m = await startMock({ template, decodedStyle });
      for (const answerSpan of ["tokenize", "decoded"] as const) {
        const vlm = client({ answerSpan }, [m.url]);
        for (const answer of ["no", "tennis racket"]) {
          const [result] = await vlm.scoreAnswer([{ prompt: prompt(2), answer }]);
          const truth = m.truth.get(answer)!;
          const sum = truth.answerLogprobs.reduce((a, b) => a + b, 0);
          expect(result, `${template}/${decodedStyle}/${answerSpan}/${answer}`).toEqual({
            logprobSum: expect.closeTo(sum, 12),
            logprobMean: expect.closeTo(sum / truth.answerLogprobs.length, 12),
            tokens: truth.answerLogprobs.length,
          });
        }
      }
      // The case is really exercised: the scored answer is one token, decoded with the space before it.
      expect(m.truth.get("no")!.answerDecoded).toEqual([first]);
    }
  });

  it("fails loudly (never a silent score) when the server's answer span is shifted", async () => {
    for (const answerSpan of ["tokenize", "decoded"] as const) {
      mock.inject("chat", { kind: "wrong-span" });
      const vlm = client({ answerSpan });
      const [result] = await vlm.scoreAnswer([{ prompt: prompt(1), answer: "red" }]);
      expect(result).toMatchObject({ reason: "answer-span" });
    }
  });

  it("rejects an empty answer as a failure outcome", async () => {
    const [result] = await client().scoreAnswer([{ prompt: prompt(1), answer: "  " }]);
    expect(result).toEqual({ reason: "invalid-request", message: "empty answer" });
  });
});

describe("retries, timeouts and failures", () => {
  it("retries 5xx, malformed JSON and connection resets, then succeeds", async () => {
    mock.inject("chat", { kind: "status", status: 500 }, { kind: "malformed" }, { kind: "reset" });
    const vlm = client();
    const [result] = await vlm.generate([prompt(1)]);
    expect(isFailure(result)).toBe(false);
    expect(mock.requests).toBe(4);
    expect(vlm.getStats()).toMatchObject({ calls: 1, retries: 3, httpRequests: 4, failures: { total: 0 } });
  });

  it("honours Retry-After on 429", async () => {
    mock.inject("chat", { kind: "status", status: 429, retryAfter: "1" });
    const vlm = client();
    const start = performance.now();
    const [result] = await vlm.generate([prompt(0)]);
    expect(isFailure(result)).toBe(false);
    expect(performance.now() - start).toBeGreaterThanOrEqual(950);
  });

  it("times out a hanging request and retries it", async () => {
    mock.inject("chat", { kind: "hang" });
    const vlm = client({ timeoutMs: 150 });
    const [result] = await vlm.generate([prompt(0)]);
    expect(isFailure(result)).toBe(false);
    expect(mock.requests).toBe(2);
  });

  it("turns a request that keeps failing into a failure with its reason after maxRetries + 1 attempts", async () => {
    mock.failAll = { kind: "hang" };
    const vlm = client({ timeoutMs: 60, maxRetries: 2, cooldownAfterFailures: 10 });
    const [result] = await vlm.generate([prompt(0)]);
    expect(result).toMatchObject({
      reason: "timeout",
      message: expect.stringMatching(/^no response within 60 ms .*3 attempts\)$/),
    });
    expect(mock.requests).toBe(3);
    expect(vlm.getStats().failures.byReason).toEqual({ timeout: 1 });
  });

  it("does not retry a 4xx client error", async () => {
    const vlm = client({ model: "other-model" });
    const [result] = await vlm.generate([prompt(0)]);
    expect(result).toMatchObject({ reason: "http-4xx", message: expect.stringMatching(/^HTTP 404 .*other-model/) });
    expect(mock.requests).toBe(1);
  });

  it("keeps backoff delays within the equal-jitter band", async () => {
    mock.inject("chat", { kind: "status", status: 503 }, { kind: "status", status: 503 });
    const vlm = client({ backoffBaseMs: 100, backoffMaxMs: 1000 });
    const start = performance.now();
    await vlm.generate([prompt(0)]);
    const elapsed = performance.now() - start;
    // retry 0 waits in [50, 100], retry 1 in [100, 200]
    expect(elapsed).toBeGreaterThanOrEqual(145);
    expect(elapsed).toBeLessThan(600);
  });

  it("cools a failing endpoint down and serves the batch from the healthy one", async () => {
    const bad = await startMock();
    bad.failAll = { kind: "status", status: 500 };
    const vlm = client({ cooldownAfterFailures: 2, cooldownMs: 60_000, concurrencyPerEndpoint: 2 }, [
      bad.url,
      mock.url,
    ]);
    const results = await vlm.generate(Array.from({ length: 10 }, (_, i) => prompt(i % 3, `Q${i}?`)));
    expect(results.every((r) => !isFailure(r))).toBe(true);
    expect(bad.requests).toBeLessThanOrEqual(3);
    const [badHealth, goodHealth] = vlm.endpointHealth();
    expect(badHealth).toMatchObject({ cooldowns: 1, coolingForMs: expect.any(Number) });
    expect(badHealth.coolingForMs).toBeGreaterThan(0);
    expect(goodHealth.failures).toBe(0);
  });

  it("treats a refused connection as a retryable connection failure and routes to the live replica", async () => {
    const dead = await startMock();
    const deadUrl = dead.url;
    await dead.close();
    const [alone] = await client({ maxRetries: 1 }, [deadUrl]).generate([prompt(0)]);
    expect(alone).toMatchObject({
      reason: "unreachable",
      message: expect.stringMatching(/^connection failed: .*ECONNREFUSED.*2 attempts\)$/),
    });
    const both = client({ maxRetries: 2 }, [deadUrl, mock.url]);
    const results = await both.generate(Array.from({ length: 6 }, (_, i) => prompt(0, `R${i}?`)));
    expect(results.every((r) => !isFailure(r))).toBe(true);
  });

  it("rejects the batch when the caller aborts, and stops sending", async () => {
    mock.latencyMs = 50;
    const vlm = client({ concurrencyPerEndpoint: 2 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user cancelled")), 70);
    await expect(
      vlm.generate(
        Array.from({ length: 20 }, (_, i) => prompt(0, `Q${i}?`)),
        { signal: controller.signal },
      ),
    ).rejects.toThrow("user cancelled");
    await new Promise((r) => setTimeout(r, 120));
    expect(mock.requests).toBeLessThanOrEqual(4);
  });
});

describe("concurrency", () => {
  it("keeps exactly the per-endpoint limit of requests in flight", async () => {
    mock.latencyMs = 80;
    const vlm = client({ concurrencyPerEndpoint: 8 });
    const start = performance.now();
    const results = await vlm.generate(Array.from({ length: 16 }, (_, i) => prompt(0, `Q${i}?`)));
    const elapsed = performance.now() - start;
    expect(results.every((r) => !isFailure(r))).toBe(true);
    expect(mock.maxInFlight).toBe(8);
    expect(elapsed).toBeLessThan(16 * 80 * 0.5); // two waves, not sixteen
  });

  it("spreads a batch across replicas, each within its own limit", async () => {
    const second = await startMock({ latencyMs: 60 });
    mock.latencyMs = 60;
    const vlm = client({ concurrencyPerEndpoint: 3 }, [mock.url, `${second.url}/v1/`]);
    await vlm.generate(Array.from({ length: 12 }, (_, i) => prompt(0, `Q${i}?`)));
    expect(mock.maxInFlight).toBe(3);
    expect(second.maxInFlight).toBe(3);
    expect(mock.requests + second.requests).toBe(12);
  });
});

describe("summary and identity", () => {
  it("reports calls, failures by reason, latency percentiles and token counts", async () => {
    const vlm = client({ maxRetries: 0 });
    mock.inject("chat", { kind: "status", status: 500 });
    const results = await vlm.generate([prompt(0, "A?"), prompt(1, "B?"), prompt(2, "C?")]);
    const stats = vlm.getStats();
    const ok = results.filter((r) => !isFailure(r)) as { tokens: number }[];
    expect(ok).toHaveLength(2);
    expect(stats).toMatchObject({ calls: 3, failures: { total: 1, byReason: { "http-5xx": 1 } }, retries: 0 });
    expect(stats.completionTokens).toBe(ok[0].tokens + ok[1].tokens);
    expect(stats.promptTokens).toBeGreaterThan(0);
    expect(stats.latencyMs.count).toBe(3);
    expect(stats.latencyMs.p50).toBeLessThanOrEqual(stats.latencyMs.p99);
  });

  it("derives the id from model and settings, not from replica URLs", () => {
    const a = client({}, ["http://h1:8000"]);
    expect(client({}, ["http://h2:8000/v1", "http://h3:8000"]).id).toBe(a.id);
    expect(client({ layout: "chat-turns" }).id).not.toBe(a.id);
    expect(client({ systemPrompt: "Answer." }).id).not.toBe(a.id);
    expect(client({ maxTokens: 10 }).id).not.toBe(a.id);
    expect(client({ imageUrl: "file" }).id).not.toBe(a.id);
    expect(a.id).toMatch(/^openai:mock-vl:[0-9a-f]{16}$/);
  });

  it("normalises base URLs with or without /v1", () => {
    expect(normalizeBaseUrl("http://h:8000/v1/")).toBe("http://h:8000");
    expect(normalizeBaseUrl("http://h:8000")).toBe("http://h:8000");
    expect(normalizeBaseUrl("https://h/proxy/v1")).toBe("https://h/proxy");
  });

  it("rejects bad configuration with an error naming the field", () => {
    expect(() => client({ concurrencyPerEndpoint: 0 })).toThrow(LeverError);
    expect(() => client({ concurrencyPerEndpoint: 0 })).toThrow(/field "concurrencyPerEndpoint"/);
    expect(() => client({ extraBody: { max_tokens: 3 } })).toThrow(/extraBody may not set/);
    expect(() => client({}, ["ftp://x"])).toThrow(/field "baseUrls.0"/);
    expect(() => client({ apiKeyEnv: "LEVER_TEST_UNSET_KEY" })).toThrow(/LEVER_TEST_UNSET_KEY is not set/);
  });

  it("sends the API key from the named environment variable", async () => {
    const vlm = new OpenAiVlm(
      { baseUrls: [mock.url], model: "mock-vl", apiKeyEnv: "MY_KEY" },
      { env: { MY_KEY: "secret" } },
    );
    await vlm.generate([prompt(0)]);
    expect(mock.log[0].headers.authorization).toBe("Bearer secret");
    expect(mock.log[0].headers["content-type"]).toBe("application/json");
    expect(SPECIAL_TOKENS["<|im_end|>"]).toBe(151645);
  });
});

describe("failing servers fail fast", () => {
  it("stops sending once every endpoint has failed for breakerMs: circuit-open failures name the endpoint", async () => {
    mock.failAll = { kind: "status", status: 500 };
    const vlm = client({ breakerMs: 300, cooldownMs: 100, maxRetries: 10 });
    const start = performance.now();
    const results = await vlm.generate(Array.from({ length: 20 }, (_, i) => prompt(0, `B${i}?`)));
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(2000);
    expect(results.every(isFailure)).toBe(true);
    const open = results.filter((r) => isFailure(r) && r.reason === "circuit-open");
    expect(open.length).toBeGreaterThan(10);
    expect(open[0]).toMatchObject({
      message: expect.stringMatching(
        new RegExp(
          `^the VLM endpoint has been failing for 0\\.[3-9] s .*breakerMs 300.*${mock.url} \\(http-5xx: HTTP 500`,
        ),
      ),
    });
    const sent = mock.requests;
    await vlm.generate([prompt(0, "after?")]);
    expect(mock.requests).toBe(sent); // open for good: nothing more is sent
  });

  it("finishes a server that fails half the prompts without cooling it down or opening the breaker", async () => {
    const half = await startMock();
    const fails = (question: string) => fnv1a(question) % 2 === 0;
    half.faultFor = (_path, body) => {
      const messages = (body?.messages ?? []) as { content: { type: string; text?: string }[] }[];
      const text = messages.at(-1)?.content.at(-1)?.text ?? "";
      return fails(text) ? { kind: "status", status: 500 } : null;
    };
    const questions = Array.from({ length: 40 }, (_, i) => `H${i}?`);
    // Consecutive failures are frequent (each failing prompt fails 3 times), but successes keep coming.
    const vlm = client({ maxRetries: 2, cooldownAfterFailures: 2, cooldownMs: 2_000, breakerMs: 1_000 }, [half.url]);
    const results = await vlm.generate(questions.map((q) => prompt(0, q)));
    const expected = questions.map((q) => fails(`Question:${q} Short answer:`));
    expect(expected.filter(Boolean).length).toBeGreaterThan(10);
    expect(expected.filter((f) => !f).length).toBeGreaterThan(10);
    expect(results.map((r) => isFailure(r))).toEqual(expected);
    expect(results.filter(isFailure).every((r) => r.reason === "http-5xx")).toBe(true);
    expect(vlm.endpointHealth()[0].cooldowns).toBe(0);
  });

  it("reports retries, cooling endpoints and time without success while it waits", async () => {
    mock.failAll = { kind: "status", status: 503 };
    const vlm = client({ cooldownAfterFailures: 1, cooldownMs: 5_000, breakerMs: 30_000, maxRetries: 5 });
    const controller = new AbortController();
    const batch = vlm.generate([prompt(0, "W1?"), prompt(0, "W2?")], { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 150));
    const activity = vlm.activity();
    expect(activity).toMatchObject({ retrying: 2, endpoints: 1, cooling: 1, inFlight: 0, waiting: 2 });
    expect(activity.failingForMs).toBeGreaterThanOrEqual(100);
    expect(describeActivity(activity)).toMatch(
      /^retrying 2, 1\/1 endpoint cooling 5 s \(2 waiting\), no success for 1 s/,
    );
    controller.abort(new Error("stop"));
    await expect(batch).rejects.toThrow("stop");
    expect(vlm.activity().retrying).toBe(0);
  });

  it("hands each outcome to onResult as it arrives, before the batch resolves", async () => {
    const slow = await startMock({ latencyMs: 40 });
    const vlm = client({ concurrencyPerEndpoint: 2 }, [slow.url]);
    const arrivals: { index: number; at: number; outcome: Outcome<GenerateResult> }[] = [];
    const start = performance.now();
    const results = await vlm.generate(
      Array.from({ length: 6 }, (_, i) => prompt(0, `A${i}?`)),
      { onResult: (index, outcome) => arrivals.push({ index, at: performance.now() - start, outcome }) },
    );
    const end = performance.now() - start;
    expect(arrivals.map((a) => a.index).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    for (const a of arrivals) expect(a.outcome).toBe(results[a.index]);
    // Three waves of two: the first two arrive a wave (~40 ms) or more before the end.
    expect(arrivals[0].at).toBeLessThan(end - 30);
  });

  it("emits every failure reason of the typed list, and only those", async () => {
    const seen = new Set<VlmFailureReason>();
    const note = (outcomes: Outcome<unknown>[]) => {
      for (const o of outcomes) if (isFailure(o)) seen.add(o.reason);
    };
    const dead = await startMock();
    const deadUrl = dead.url;
    await dead.close();
    note(await client({ maxRetries: 0 }, [deadUrl]).generate([prompt(0)])); // unreachable
    mock.inject("chat", { kind: "hang" });
    note(await client({ maxRetries: 0, timeoutMs: 50 }).generate([prompt(0)])); // timeout
    mock.inject("chat", { kind: "status", status: 429 });
    note(await client({ maxRetries: 0 }).generate([prompt(0)])); // rate-limited
    mock.inject("chat", { kind: "status", status: 502 });
    note(await client({ maxRetries: 0 }).generate([prompt(0)])); // http-5xx
    note(await client({ model: "other" }).generate([prompt(0)])); // http-4xx
    mock.inject("chat", { kind: "malformed" });
    note(await client({ maxRetries: 0 }).generate([prompt(0)])); // malformed-response
    note(await client().scoreAnswer([{ prompt: prompt(0), answer: "" }])); // invalid-request
    const missing = prompt(0);
    missing.query.imagePath = join(dir, "gone.jpg");
    note(await client().generate([missing])); // missing-image
    mock.inject("chat", { kind: "wrong-span" });
    note(await client().scoreAnswer([{ prompt: prompt(0), answer: "red" }])); // answer-span
    const silent = await startMock({ answer: () => null });
    note(await client({}, [silent.url]).generate([prompt(0)])); // empty-answer
    mock.failAll = { kind: "status", status: 500 };
    note(await client({ breakerMs: 50, cooldownMs: 10, maxRetries: 20 }).generate([prompt(0)])); // circuit-open
    expect([...seen].sort()).toEqual([...VLM_FAILURE_REASONS].sort());
  });
});

describe("the OpenAI client's model id", () => {
  it("stays what earlier builds computed (it keys every cached answer of the workspace)", () => {
    const id = (options: Partial<OpenAiVlmOptions>) =>
      new OpenAiVlm({ baseUrls: ["http://a:1"], model: "m", ...options }).id;
    expect(id({})).toBe("openai:m:c587f2ec2872b622");
    // The end-of-turn token counts only when it is scored.
    expect(id({ includeEndOfTurn: false, endOfTurnToken: "<x>" })).toBe("openai:m:c587f2ec2872b622");
    expect(
      id({
        baseUrls: ["http://a:1", "http://b:1"],
        model: "Qwen/Qwen2.5-VL-3B-Instruct",
        layout: "chat-turns",
        systemPrompt: null,
        maxTokens: 7,
        temperature: 0.5,
        extraBody: { mm_processor_kwargs: { max_pixels: 200704 } },
        includeEndOfTurn: true,
        endOfTurnToken: "<e>",
        imageUrl: "file",
        answerSpan: "decoded",
        timeoutMs: 5,
        seed: 9,
      }),
    ).toBe("openai:Qwen/Qwen2.5-VL-3B-Instruct:857a9974680877c7");
  });

  it("stays the same when a setting is added with a default, until the setting is set (a build with one more setting)", () => {
    const grown = openAiVlmConfigSchema.extend({ topP: z.number().default(1) });
    const id = (options: Record<string, unknown>) =>
      openAiVlmId(grown.parse({ baseUrls: ["http://a:1"], model: "m", ...options }) as OpenAiVlmConfig, "vqa", grown);
    expect(id({})).toBe("openai:m:c587f2ec2872b622");
    expect(id({ topP: 1 })).toBe("openai:m:c587f2ec2872b622");
    expect(id({ topP: 0.9 })).not.toBe("openai:m:c587f2ec2872b622");
  });
});
