/**
 * `lever serve` refuses to start, with one `error:` line and exit code 2, on a selector trained for
 * another index or embedding kind, an index without the embeddings the selector reads, an upstream that
 * fails the preflight, and embeddings no local model is known for.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { expectUserError, runCli } from "../helpers/cli.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { type ServeFixture, serveWorkspace } from "./fixture.js";

let f: ServeFixture;
let mock: MockVllm;

beforeAll(async () => {
  f = serveWorkspace();
  mock = await MockVllm.start();
  // An index with items but no embeddings.
  f.sim.ws.putDataset({ name: "bare", split: "train", source: "synth", files: [] }, f.sim.ws.loadItems("train"));
});
afterAll(async () => {
  await mock.close();
  f.sim.ws.close();
});

function serve(...args: string[]) {
  return runCli([
    "--workspace",
    join(f.sim.dir, "ws"),
    "serve",
    "--vlm",
    "openai",
    "--model",
    "mock-vl",
    "--port",
    "0",
    ...args,
  ]);
}

function checkpointWith(name: string, provenance: Record<string, unknown>): string {
  const config = SelectorConfigSchema.parse({ d: 64, hidden: 32, shots: 4, dropout: 0, attnDropout: 0 });
  const file = join(f.sim.dir, name);
  saveCheckpoint(file, {
    config,
    params: initParams(config, 3),
    trainedK: 12,
    shots: 4,
    provenance: { stage: "init", createdAt: "2026-01-01T00:00:00Z", ...provenance },
  });
  return file;
}

describe("lever serve refuses to start", () => {
  it("on a selector trained on another index's embeddings", async () => {
    const other = checkpointWith("other.safetensors", {
      notes: { embedding: "joint" },
      dataHashes: { indexEmbedding: "f".repeat(64) },
    });
    const result = await serve(
      "--checkpoint",
      other,
      "--index",
      "train",
      "--base-url",
      mock.url,
      "--client-embeddings",
    );
    expectUserError(result, /trained on another index or embedding/);
  });

  it("on a selector trained for another embedding kind", async () => {
    const result = await serve(
      "--checkpoint",
      f.checkpoint,
      "--index",
      "train",
      "--selector-embedding",
      "text",
      "--base-url",
      mock.url,
      "--client-embeddings",
    );
    expectUserError(result, /trained on "joint" embeddings, not "text"/);
  });

  it("on an index without the embeddings the selector reads", async () => {
    const result = await serve(
      "--checkpoint",
      f.checkpoint,
      "--index",
      "bare",
      "--base-url",
      mock.url,
      "--client-embeddings",
    );
    expectUserError(result, /has no "joint" embedding/);
  });

  it("on an upstream that fails the preflight", async () => {
    const dead = await MockVllm.start();
    await dead.close();
    const result = await serve(
      "--checkpoint",
      f.checkpoint,
      "--index",
      "train",
      "--base-url",
      dead.url,
      "--client-embeddings",
      "--timeout-ms",
      "500",
      "--backoff-base-ms",
      "5",
    );
    expectUserError(result);
  });

  it("without a way to embed requests, and with a model for imported embeddings", async () => {
    expectUserError(
      await serve("--checkpoint", f.checkpoint, "--index", "train", "--base-url", mock.url),
      /--embed-model DIR.*--client-embeddings/,
    );
    expectUserError(
      await serve("--checkpoint", f.checkpoint, "--index", "train", "--base-url", mock.url, "--embed-model", f.sim.dir),
      /were imported, not computed by lever embed compute/,
    );
  });

  it("on a selector run or file that does not exist", async () => {
    expectUserError(
      await serve("--checkpoint", "no-such-run", "--index", "train", "--base-url", mock.url, "--client-embeddings"),
      /no training run "no-such-run"/,
    );
  });
});
