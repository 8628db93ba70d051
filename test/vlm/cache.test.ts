import { mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  cachedVlm,
  cacheSummary,
  ensureCacheTable,
  ImageIdentities,
  MemoryResponseCache,
  pruneCache,
  requestKey,
  SqliteResponseCache,
} from "../../src/vlm/cache.js";
import { OpenAiVlm } from "../../src/vlm/openai-client.js";
import {
  type GenerateResult,
  isFailure,
  type Outcome,
  type Vlm,
  type VlmPrompt,
  vlmFailure,
} from "../../src/vlm/types.js";
import { MockVllm } from "../helpers/mock-vllm.js";

let dir: string;
let mock: MockVllm;

function prompt(question: string, shots = 2): VlmPrompt {
  return {
    demonstrations: Array.from({ length: shots }, (_, i) => ({
      questionId: `d${i}`,
      imagePath: join(dir, `d${i}.jpg`),
      question: `Demo ${i}?`,
      answer: "yes",
    })),
    query: { questionId: "q", imagePath: join(dir, "q.jpg"), question },
  };
}

function openai(): OpenAiVlm {
  return new OpenAiVlm({ baseUrls: [mock.url], model: "mock-vl", maxRetries: 0, timeoutMs: 2000 });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lever-cache-"));
  for (const name of ["d0.jpg", "d1.jpg", "q.jpg"]) writeFileSync(join(dir, name), Buffer.from([0xff, 0xd8, 0xff, 1]));
  mock = await MockVllm.start();
});

afterEach(() => {
  mock.failAll = null;
  mock.clearLog();
});

afterAll(async () => {
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("cachedVlm over the OpenAI backend", () => {
  it("answers a repeated run with zero HTTP calls and identical results", async () => {
    const cache = new MemoryResponseCache();
    const prompts = [prompt("A?"), prompt("B?")];
    const scores = [{ prompt: prompt("A?"), answer: "two dogs" }];
    const first = cachedVlm(openai(), cache);
    const gen1 = await first.generate(prompts);
    const score1 = await first.scoreAnswer(scores);
    expect(mock.requests).toBeGreaterThan(0);
    mock.clearLog();
    const second = cachedVlm(openai(), cache);
    expect(await second.generate(prompts)).toEqual(gen1);
    expect(await second.scoreAnswer(scores)).toEqual(score1);
    expect(mock.requests).toBe(0);
    expect(second.getStats()).toMatchObject({ cacheHits: 3, cacheMisses: 0, calls: 0 });
  });

  it("never caches failures: the next run asks the server again", async () => {
    const cache = new MemoryResponseCache();
    mock.failAll = { kind: "status", status: 500 };
    const [failed] = await cachedVlm(openai(), cache).generate([prompt("C?")]);
    expect(isFailure(failed)).toBe(true);
    expect(cache.entries.size).toBe(0);
    mock.failAll = null;
    const vlm = cachedVlm(openai(), cache);
    const [ok] = await vlm.generate([prompt("C?")]);
    expect(isFailure(ok)).toBe(false);
    expect(vlm.getStats()).toMatchObject({ cacheMisses: 1, calls: 1 });
    expect(cache.entries.size).toBe(1);
  });

  it("de-duplicates identical requests within a batch and sends only the misses", async () => {
    const cache = new MemoryResponseCache();
    const vlm = cachedVlm(openai(), cache);
    await vlm.generate([prompt("D?")]);
    mock.clearLog();
    const results = await vlm.generate([prompt("E?"), prompt("D?"), prompt("E?"), prompt("E?")]);
    expect(mock.count("/v1/chat/completions")).toBe(1);
    expect(results[0]).toEqual(results[2]);
    expect(vlm.getStats()).toMatchObject({ cacheHits: 1, cacheMisses: 2, deduplicated: 2 });
  });

  it("keys on image identity: touching an image file makes the request a miss", async () => {
    const cache = new MemoryResponseCache();
    await cachedVlm(openai(), cache).generate([prompt("F?")]);
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(dir, "q.jpg"), later, later);
    mock.clearLog();
    await cachedVlm(openai(), cache).generate([prompt("F?")]);
    expect(mock.count("/v1/chat/completions")).toBe(1);
  });
});

describe("request keys", () => {
  it("depend on model, operation, texts, answer, demonstration order and question ids", async () => {
    const base = prompt("G?");
    const key = (p: VlmPrompt, kind: "generate" | "score" = "generate", answer: string | null = null, model = "m") =>
      requestKey(model, kind, p, answer);
    const k = await key(base);
    expect(await key(prompt("G?"))).toBe(k);
    // Items with identical text and no image are still different questions (the simulator reads identity).
    expect(await key({ ...base, query: { ...base.query, questionId: "other" } })).not.toBe(k);
    expect(await key(base, "generate", null, "m2")).not.toBe(k);
    expect(await key(base, "score", "yes")).not.toBe(await key(base, "score", "no"));
    expect(await key(base, "score", "yes")).not.toBe(k);
    expect(await key({ ...base, demonstrations: [...base.demonstrations].reverse() })).not.toBe(k);
    expect(await key(prompt("G!"))).not.toBe(k);
  });
});

describe("cachedVlm over any Vlm", () => {
  it("caches a backend without stats of its own and counts its failures", async () => {
    let calls = 0;
    const fake: Vlm = {
      id: "sim:test",
      async generate(prompts) {
        calls += prompts.length;
        return prompts.map(
          (p): Outcome<GenerateResult> =>
            p.query.question === "fail?" ? vlmFailure("http-5xx", "no") : { text: p.query.question, tokens: 1 },
        );
      },
      async scoreAnswer(requests) {
        return requests.map(() => ({ logprobSum: -1, logprobMean: -1, tokens: 1 }));
      },
    };
    const noImages = (q: string): VlmPrompt => ({
      demonstrations: [],
      query: { questionId: "1", imagePath: null, question: q },
    });
    const vlm = cachedVlm(fake, new MemoryResponseCache());
    await vlm.generate([noImages("a?"), noImages("fail?")]);
    const again = await vlm.generate([noImages("a?"), noImages("fail?")]);
    expect(again[0]).toEqual({ text: "a?", tokens: 1 });
    expect(calls).toBe(3);
    expect(vlm.getStats()).toMatchObject({
      calls: 3,
      cacheHits: 1,
      failures: { total: 2, byReason: { "http-5xx": 2 } },
    });
    expect(vlm.id).toBe("sim:test");
  });

  it("names an image inside the workspace workspace-relative: a moved workspace keeps its keys", async () => {
    const root = mkdtempSync(join(tmpdir(), "lever-cache-move-"));
    const ws1 = join(root, "ws1");
    mkdirSync(join(ws1, "images"), { recursive: true });
    writeFileSync(join(ws1, "images", "1.jpg"), "jpeg");
    const at = (ws: string): VlmPrompt => ({
      demonstrations: [],
      query: { questionId: "1", imagePath: join(ws, "images", "1.jpg"), question: "?" },
    });
    const before = await requestKey("m", "generate", at(ws1), null, new ImageIdentities(ws1));
    const absolute = await requestKey("m", "generate", at(ws1), null);
    const ws2 = join(root, "ws2");
    renameSync(ws1, ws2);
    expect(await requestKey("m", "generate", at(ws2), null, new ImageIdentities(ws2))).toBe(before);
    // Without the workspace (an image outside it) the absolute path is the identity, as before.
    expect(await requestKey("m", "generate", at(ws2), null)).not.toBe(absolute);
    rmSync(root, { recursive: true, force: true });
  });

  it("recomputes and overwrites an unreadable stored response", async () => {
    const cache = new MemoryResponseCache();
    const { fake, p, key } = await freshVlm("sim:x");
    cache.put(key, "sim:x", "generate", '{"text": 3}');
    expect(await cachedVlm(fake, cache).generate([p])).toEqual([{ text: "fresh", tokens: 1 }]);
    expect(JSON.parse(cache.get(key)!)).toEqual({ text: "fresh", tokens: 1 });
  });
});

/** A VLM answering "fresh" to every prompt, one prompt, and its cache key for that VLM: to store a stale response under. */
async function freshVlm(id: string): Promise<{ fake: Vlm; p: VlmPrompt; key: string }> {
  const fake: Vlm = {
    id,
    generate: async (prompts) => prompts.map(() => ({ text: "fresh", tokens: 1 })),
    scoreAnswer: async () => [],
  };
  const p: VlmPrompt = { demonstrations: [], query: { questionId: "1", imagePath: null, question: "?" } };
  return { fake, p, key: await requestKey(id, "generate", p, null) };
}

describe("empty answers and the cache", () => {
  it("never stores an empty completion, and asks again for a blank answer an older build stored", async () => {
    const cache = new MemoryResponseCache();
    const silent = await MockVllm.start({ answer: () => "" });
    try {
      const vlm = cachedVlm(
        new OpenAiVlm({ baseUrls: [silent.url], model: "mock-vl", maxRetries: 0, timeoutMs: 2000 }),
        cache,
      );
      const [first] = await vlm.generate([prompt("Empty?")]);
      expect(first).toMatchObject({ reason: "empty-answer" });
      expect(cache.entries.size).toBe(0);
    } finally {
      await silent.close();
    }
    const { fake, p, key } = await freshVlm("sim:blank");
    cache.put(key, "sim:blank", "generate", '{"text":" ","tokens":1}');
    expect(await cachedVlm(fake, cache).generate([p])).toEqual([{ text: "fresh", tokens: 1 }]);
  });
});

describe("SQLite cache", () => {
  function db() {
    const d = new Database(":memory:");
    ensureCacheTable(d);
    return d;
  }

  it("persists responses across wrappers on the workspace table", async () => {
    const d = db();
    const prompts = [prompt("H?"), prompt("I?")];
    const first = await cachedVlm(openai(), new SqliteResponseCache(d)).generate(prompts);
    mock.clearLog();
    const second = await cachedVlm(openai(), new SqliteResponseCache(d)).generate(prompts);
    expect(second).toEqual(first);
    expect(mock.requests).toBe(0);
    const rows = d.prepare("SELECT model, kind, created_at FROM vlm_cache").all() as { model: string; kind: string }[];
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ model: openai().id, kind: "generate" });
  });

  it("refuses a database without the vlm_cache table", () => {
    expect(() => new SqliteResponseCache(new Database(":memory:"))).toThrow(/no vlm_cache table/);
  });

  it("summarises entries and bytes per model and kind", () => {
    const d = db();
    const cache = new SqliteResponseCache(d);
    cache.put("k1", "m1", "generate", "abc");
    cache.put("k2", "m1", "generate", "de");
    cache.put("k3", "m2", "score", "é"); // 2 bytes in UTF-8
    expect(cacheSummary(d).map(({ model, kind, entries, bytes }) => ({ model, kind, entries, bytes }))).toEqual([
      { model: "m1", kind: "generate", entries: 2, bytes: 2 + 3 + 2 + 2 },
      { model: "m2", kind: "score", entries: 1, bytes: 2 + 2 },
    ]);
  });

  it("prunes by model and by age, and refuses an empty filter", () => {
    const d = db();
    const insert = d.prepare("INSERT INTO vlm_cache VALUES (?, ?, 'generate', 'x', ?)");
    insert.run("old-m1", "m1", "2020-01-01T00:00:00.000Z");
    insert.run("new-m1", "m1", "2026-01-10T00:00:00.000Z");
    insert.run("old-m2", "m2", "2020-01-01T00:00:00.000Z");
    const now = new Date("2026-01-11T00:00:00.000Z");
    expect(() => pruneCache(d, {})).toThrow(/give --model, --older-than or --all/);
    expect(pruneCache(d, { model: "m1", olderThanDays: 30, now })).toBe(1);
    expect(pruneCache(d, { olderThanDays: 30, now })).toBe(1);
    expect((d.prepare("SELECT key FROM vlm_cache").all() as { key: string }[]).map((r) => r.key)).toEqual(["new-m1"]);
    expect(pruneCache(d, { model: "m1" })).toBe(1);
    expect(pruneCache(d, { all: true })).toBe(0);
  });
});
