/**
 * The JSONL audit log (`--audit-log`): one line per chat or select request, with the demonstrations in
 * prompt order (the ones returned to the client), the image's sha256 and size and never its bytes; a
 * failed request's line carries its error and what was known when it failed (an upstream failure keeps
 * the demonstrations; a malformed request has only the error). Health and metrics are not logged.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import type { ServeApp } from "../../src/serve/server.js";
import type { MockVllm } from "../helpers/mock-vllm.js";
import { chatBody, dataUrlOf, jointRow, post, type ServeFixture, serveWorkspace, startServe } from "./fixture.js";

let f: ServeFixture;
let app: ServeApp;
let mock: MockVllm;
let file: string;
let items: VqaItem[];
let lines: Record<string, unknown>[];
let text: string;
const replies: { status: number; json: Record<string, unknown> }[] = [];

const idsOf = (json: Record<string, unknown>) =>
  ((json.lever ?? json) as { demonstrations: { id: string }[] }).demonstrations.map((d) => d.id);

beforeAll(async () => {
  f = serveWorkspace();
  file = join(f.sim.dir, "audit.jsonl");
  items = f.sim.ws.loadItems("val");
  ({ app, mock } = await startServe(f, { auditLog: file, maxRetries: 0 }));
  // One at a time, so the lines are in this order.
  replies.push(await post(`${app.url}/v1/chat/completions`, chatBody(f, items[0])));
  replies.push(
    await post(`${app.url}/v1/select`, {
      question: items[1].question,
      image: dataUrlOf(items[1]),
      embedding: jointRow(f, items[1].questionId),
      shots: 3,
    }),
  );
  replies.push(await post(`${app.url}/v1/chat/completions`, '{"model": "mock-vl", "messages": ['));
  mock.failAll = { kind: "status", status: 500 };
  replies.push(await post(`${app.url}/v1/chat/completions`, chatBody(f, items[2])));
  mock.failAll = null;
  await fetch(`${app.url}/health`);
  await fetch(`${app.url}/metrics`);
  await app.close(); // flushes the log
  text = readFileSync(file, "utf8");
  lines = text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}, 120_000);
afterAll(async () => {
  await mock.close();
  f.sim.ws.close();
});

describe("the audit log", () => {
  it("has one JSON line per chat or select request, none for health or metrics", () => {
    expect(replies.map((r) => r.status)).toEqual([200, 200, 400, 502]);
    expect(text.endsWith("\n")).toBe(true);
    expect(lines.map((l) => [l.route, l.status])).toEqual([
      ["chat", 200],
      ["select", 200],
      ["chat", 400],
      ["chat", 502],
    ]);
    for (const line of lines) {
      expect(Number.isNaN(Date.parse(String(line.time)))).toBe(false);
      expect(line.ms).toBeGreaterThan(0);
    }
  });

  it("records each answered request's question, shots, checkpoint, answer and demonstrations in prompt order", () => {
    const [chat, select] = lines;
    const checkpoint = (replies[0].json.lever as { checkpoint: string }).checkpoint;
    expect(chat).toMatchObject({ question: items[0].question, shots: 2, checkpoint });
    expect(chat.demonstrations).toEqual(idsOf(replies[0].json));
    expect((chat.demonstrations as string[]).length).toBe(2);
    expect(chat.answer).toBe((replies[0].json.lever as { answer: string }).answer);
    expect(select).toMatchObject({ question: items[1].question, shots: 3, checkpoint });
    expect(select.demonstrations).toEqual(idsOf(replies[1].json));
    expect((select.demonstrations as string[]).length).toBe(3);
  });

  it("holds each image's sha256 and size, never its bytes", () => {
    for (const [line, item] of [
      [lines[0], items[0]],
      [lines[1], items[1]],
    ] as const) {
      const bytes = readFileSync(item.imagePath as string);
      expect(line.image).toEqual({ sha256: createHash("sha256").update(bytes).digest("hex"), bytes: bytes.length });
      expect(text).not.toContain(bytes.toString("base64").slice(0, 64));
    }
    expect(text).not.toContain("data:image");
  });

  it("logs a failed request with its error: a malformed one with the error alone, an upstream failure with its demonstrations", () => {
    const [, , malformed, failed] = lines;
    expect(malformed.error).toMatch(/not valid JSON/);
    expect(malformed.demonstrations).toBeUndefined();
    expect(failed.error).toMatch(/upstream/);
    expect(failed.question).toBe(items[2].question);
    expect((failed.demonstrations as string[]).length).toBe(2);
    expect(failed.answer).toBeUndefined();
  });
});
