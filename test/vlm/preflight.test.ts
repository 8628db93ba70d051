import { inflateSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SimVlm } from "../../src/sim/vlm.js";
import { LeverError } from "../../src/util/errors.js";
import { cachedVlm, MemoryResponseCache } from "../../src/vlm/cache.js";
import { OpenAiVlm } from "../../src/vlm/openai-client.js";
import type { OpenAiVlmOptions } from "../../src/vlm/openai-settings.js";
import { closest, editDistance, MODELS_TIMEOUT_MS, modelsTimeout, PREFLIGHT_PNG } from "../../src/vlm/preflight.js";
import { preflight } from "../../src/vlm/types.js";
import { MockVllm } from "../helpers/mock-vllm.js";

let mock: MockVllm;
let deadUrl: string;
const mocks: MockVllm[] = [];

async function startMock(options: Parameters<typeof MockVllm.start>[0] = {}): Promise<MockVllm> {
  const m = await MockVllm.start(options);
  mocks.push(m);
  return m;
}

function client(options: Partial<OpenAiVlmOptions> = {}, urls = [mock.url]): OpenAiVlm {
  return new OpenAiVlm({ baseUrls: urls, model: "mock-vl", timeoutMs: 2000, backoffBaseMs: 5, ...options });
}

/** The LeverError a preflight throws (fails the test when it passes). */
async function preflightError(vlm: OpenAiVlm, scoring = false): Promise<LeverError> {
  try {
    await vlm.preflight({ scoring });
  } catch (error) {
    expect(error).toBeInstanceOf(LeverError);
    expect((error as Error).message).not.toContain("\n");
    return error as LeverError;
  }
  throw new Error("preflight passed");
}

beforeAll(async () => {
  mock = await startMock();
  const dead = await MockVllm.start();
  deadUrl = dead.url;
  await dead.close(); // nothing listens there any more: connections are refused
});

afterEach(() => {
  mock.failAll = null;
  mock.clearLog();
});

afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
});

describe("preflight of the OpenAI backend", () => {
  it("reports a server that accepts connections but never lists its models after one short wait, without a retry", async () => {
    mock.inject("models", { kind: "hang" }); // a retry would get an answer, and the check would pass
    const start = performance.now();
    const error = await preflightError(client({ timeoutMs: 300 }));
    expect(error.message).toMatch(/did not answer GET \/v1\/models within 300 ms/);
    expect(mock.log.filter((r) => r.path === "/v1/models")).toHaveLength(1);
    expect(performance.now() - start).toBeLessThan(2000);
    // A client limit below the cap is kept (the 300 ms above); a longer one is capped at 10 s (docs/vlm.md).
    expect(MODELS_TIMEOUT_MS).toBe(10_000);
    expect(modelsTimeout(300)).toBe(300);
    expect(modelsTimeout(120_000)).toBe(10_000);
  });

  it("reports a server that lists its models but hangs on the chat check after one timeoutMs, without a second wait", async () => {
    mock.inject("chat", { kind: "hang" }); // a retry would get an answer, and the check would pass
    const error = await preflightError(client({ timeoutMs: 300 }));
    expect(error.message).toMatch(/did not answer a chat request with an image within 300 ms/);
    expect(mock.log.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(1);
  });

  it("lists models, sends one image request, and for scoring one prompt_logprobs request and one /tokenize", async () => {
    await client().preflight({ scoring: false });
    expect(mock.log.map((r) => r.path)).toEqual(["/v1/models", "/v1/chat/completions"]);
    const chat = mock.log[1].body as { max_tokens: number; messages: { content: { type: string }[] }[] };
    expect(chat.max_tokens).toBe(1);
    expect(chat.messages[0].content.map((p) => p.type)).toEqual(["image_url", "text"]);
    mock.clearLog();
    await client().preflight({ scoring: true });
    expect(mock.log.map((r) => r.path)).toEqual([
      "/v1/models",
      "/v1/chat/completions",
      "/v1/chat/completions",
      "/tokenize",
    ]);
    expect(mock.log[2].body).toMatchObject({ prompt_logprobs: 0, continue_final_message: true });
    mock.clearLog();
    await client({ answerSpan: "decoded" }).preflight({ scoring: true });
    expect(mock.count("/tokenize")).toBe(0);
  });

  it("names an unreachable server in one line, quickly (one retry after the first backoff delay)", async () => {
    const start = performance.now();
    const error = await preflightError(client({ backoffBaseMs: 500 }, [deadUrl]));
    expect(error.message).toMatch(
      new RegExp(`^cannot reach the VLM server at ${deadUrl} \\(connection failed: .*ECONNREFUSED.*\\); is it running`),
    );
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(3000);
  });

  it("names a server that answers 500 and the check that failed", async () => {
    mock.failAll = { kind: "status", status: 500 };
    const error = await preflightError(client());
    expect(error.message).toMatch(
      new RegExp(`^the VLM server at ${mock.url} failed GET /v1/models: http-5xx: HTTP 500 .*injected fault 500`),
    );
    expect(mock.requests).toBe(2); // retried once
  });

  it("refuses a model the server does not serve and suggests the served name", async () => {
    const error = await preflightError(client({ model: "mock-v1" }));
    expect(error.message).toBe(
      `field "--model": the VLM server at ${mock.url} does not serve model "mock-v1" (it serves: mock-vl); did you mean "mock-vl"?`,
    );
    expect(mock.count("/v1/chat/completions")).toBe(0);
  });

  it("refuses a text-only model at the image request", async () => {
    const text = await startMock({ textOnly: true });
    const error = await preflightError(client({}, [text.url]));
    expect(error.message).toMatch(/failed a chat request with an image: http-4xx: HTTP 400 .*not a multimodal model/);
    expect(error.message).toMatch(/does "mock-vl" take images/);
  });

  it("refuses a server without prompt_logprobs only when the stage scores answers", async () => {
    const plain = await startMock({ promptLogprobs: false });
    await client({}, [plain.url]).preflight({ scoring: false });
    const error = await preflightError(client({}, [plain.url]), true);
    expect(error.message).toBe(
      `the VLM server at ${plain.url} returns no prompt_logprobs, which scoring answers needs (vLLM's extension of the chat API)`,
    );
  });

  it("checks every replica and names the failing one", async () => {
    const error = await preflightError(client({}, [mock.url, `${deadUrl}/v1`]));
    expect(error.message).toContain(`cannot reach the VLM server at ${deadUrl} `);
    expect(mock.count("/v1/models")).toBe(1);
  });

  it("is off with preflight: false, a no-op for the simulator, and passed through by the cache", async () => {
    await client({ preflight: false }, [deadUrl]).preflight({ scoring: true });
    await preflight(SimVlm.fromParams({ trainItems: 20, valItems: 5, concepts: 2 }), { scoring: true });
    await expect(
      preflight(cachedVlm(client({}, [deadUrl]), new MemoryResponseCache()), { scoring: false }),
    ).rejects.toThrow(/cannot reach the VLM server/);
  });

  it("does not count its requests as VLM calls", async () => {
    const vlm = client();
    await vlm.preflight({ scoring: true });
    expect(vlm.getStats()).toMatchObject({ calls: 0, httpRequests: 0 });
  });
});

describe("preflight helpers", () => {
  it("computes edit distances by hand-checked examples", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("mock-vl", "mock-vl")).toBe(0);
    expect(editDistance("flaw", "lawn")).toBe(2);
  });

  it("suggests a close or containing name, and nothing for unrelated ones", () => {
    const served = ["Qwen/Qwen2.5-VL-7B-Instruct", "llava-hf/llava-1.5-7b-hf"];
    expect(closest("Qwen2.5-VL-7B-Instruct", served)).toBe("Qwen/Qwen2.5-VL-7B-Instruct");
    expect(closest("qwen/qwen2.5-vl-7b-instruct", served)).toBe("Qwen/Qwen2.5-VL-7B-Instruct");
    expect(closest("llava-hf/llava-1.5-7b", served)).toBe("llava-hf/llava-1.5-7b-hf");
    expect(closest("gpt-4o", served)).toBeNull();
    expect(closest("x", [])).toBeNull();
  });

  it("sends a valid 32 × 32 RGB PNG (signature, IHDR, CRCs, inflated pixel rows)", () => {
    const png = Buffer.from(PREFLIGHT_PNG, "base64");
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const chunks = new Map<string, Buffer>();
    for (let at = 8; at < png.length; ) {
      const length = png.readUInt32BE(at);
      const type = png.toString("latin1", at + 4, at + 8);
      const data = png.subarray(at + 8, at + 8 + length);
      expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(png.subarray(at + 4, at + 8 + length)));
      chunks.set(type, data);
      at += 12 + length;
    }
    const ihdr = chunks.get("IHDR")!;
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9]]).toEqual([32, 32, 8, 2]);
    expect(inflateSync(chunks.get("IDAT")!).length).toBe(32 * (1 + 32 * 3));
    expect(chunks.has("IEND")).toBe(true);
  });
});

/** CRC-32 (ISO-HDLC, as PNG uses), bit by bit: an independent reference. */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
