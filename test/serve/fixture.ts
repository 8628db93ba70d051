/**
 * A served selector for the serve tests: a small simulated-world workspace (test/eval/sim-workspace.ts),
 * a seeded selector checkpoint (joint embedding, joint-sim pools of 12), the mock vLLM server and
 * `lever serve`'s own start-up and server on a free port.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { VqaItem } from "../../src/data/item.js";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { parseServeOptions, type ServeOptions } from "../../src/serve/options.js";
import { type ServeApp, startServer } from "../../src/serve/server.js";
import { prepareServe } from "../../src/serve/startup.js";
import { loadDatasetEmbedding } from "../../src/store/ingest/embeddings.js";
import { imageMime } from "../../src/vlm/images.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";
import { MockVllm, type MockVllmOptions } from "../helpers/mock-vllm.js";

export interface ServeFixture {
  sim: SimWorkspace;
  checkpoint: string;
}

export function serveWorkspace(params = { trainItems: 200, valItems: 30, concepts: 6 }): ServeFixture {
  const sim = simWorkspace(params);
  const config = SelectorConfigSchema.parse({ d: 64, hidden: 32, shots: 4, dropout: 0, attnDropout: 0 });
  const checkpoint = join(sim.dir, "sel.safetensors");
  saveCheckpoint(checkpoint, {
    config,
    params: initParams(config, 11),
    trainedK: 12,
    shots: 4,
    provenance: {
      stage: "init",
      createdAt: "2026-01-01T00:00:00Z",
      notes: { poolSampler: "joint-sim", embedding: "joint" },
    },
  });
  return { sim, checkpoint };
}

export function serveOptions(f: ServeFixture, urls: string[], overrides: Record<string, unknown> = {}): ServeOptions {
  return parseServeOptions({
    checkpoint: f.checkpoint,
    index: "train",
    shots: 2,
    vlm: "openai",
    baseUrls: urls,
    model: "mock-vl",
    clientEmbeddings: true,
    port: 0,
    backoffBaseMs: 5,
    ...overrides,
  });
}

export async function startServe(
  f: ServeFixture,
  overrides: Record<string, unknown> = {},
  mockOptions: MockVllmOptions = {},
): Promise<{ app: ServeApp; mock: MockVllm }> {
  const mock = await MockVllm.start(mockOptions);
  const setup = await prepareServe(f.sim.ws, serveOptions(f, [mock.url], overrides));
  const app = await startServer(setup);
  return { app, mock };
}

/** A query item's image as the data: URL `lever eval` sends for it. */
export function dataUrlOf(item: VqaItem): string {
  const bytes = readFileSync(item.imagePath as string);
  return `data:${imageMime(bytes, item.imagePath as string)};base64,${bytes.toString("base64")}`;
}

/** The joint embedding row of a val item. */
export function jointRow(f: ServeFixture, questionId: string): number[] {
  const m = loadDatasetEmbedding(f.sim.ws, "val", "joint");
  const row = m.ids.indexOf(questionId);
  return Array.from(m.data.subarray(row * m.dim, (row + 1) * m.dim));
}

/** A chat request for a val item, carrying its embedding. */
export function chatBody(f: ServeFixture, item: VqaItem, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: "mock-vl",
    messages: [
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: dataUrlOf(item) } },
          { type: "text", text: item.question },
        ],
      },
    ],
    lever: { embedding: jointRow(f, item.questionId) },
    ...extra,
  };
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch {
    json = {};
  }
  return { status: res.status, json, headers: res.headers, text };
}
