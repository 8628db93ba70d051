/**
 * In-process embedding on the tiny CLIP fixture: a workspace whose index and queries were embedded by
 * `lever embed compute` with it; `lever serve --embed-model` embeds each request's image and question
 * with the same model and sends the upstream exactly the prompts `lever eval` sent (no embedding in the
 * requests); `/v1/select` with an image and no embedding chooses the demonstrations `lever eval` chose.
 * A folder whose files differ from the recorded ones is refused at start-up.
 */
import { appendFileSync, cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawImage } from "@huggingface/transformers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEvalOptions } from "../../src/eval/config.js";
import { evaluate } from "../../src/eval/evaluate.js";
import { saveCheckpoint } from "../../src/selector/checkpoint.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { initParams } from "../../src/selector/params.js";
import { parseServeOptions } from "../../src/serve/options.js";
import { startServer } from "../../src/serve/server.js";
import { prepareServe } from "../../src/serve/startup.js";
import { Workspace } from "../../src/store/workspace.js";
import { LeverError } from "../../src/util/errors.js";
import { Rng } from "../../src/util/rng.js";
import { TINY_CLIP_DIR } from "../embed/tiny-clip.js";
import { runCliOk } from "../helpers/cli.js";
import { MockVllm } from "../helpers/mock-vllm.js";
import { dataUrlOf, post } from "./fixture.js";

let dir: string;
let wsDir: string;
let checkpoint: string;
const mocks: MockVllm[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lever-serve-embed-"));
  wsDir = join(dir, "ws");
  const synth = join(dir, "synth");
  await runCliOk(["data", "synth", "--items", "120", "--val-items", "20", "--concepts", "6", "--out", synth]);
  const rng = new Rng(7).child("serve-embed-images");
  for (const split of ["train2014", "val2014"])
    for (const name of readdirSync(join(synth, "images", split))) {
      const rgb = Uint8ClampedArray.from({ length: 48 * 40 * 3 }, () => rng.int(256));
      await new RawImage(rgb, 48, 40, 3).save(join(synth, "images", split, name));
    }
  for (const split of ["train", "val"]) {
    const files = ["--questions", join(synth, `v2_OpenEnded_mscoco_${split}2014_questions.json`)];
    files.push(
      "--annotations",
      join(synth, `v2_mscoco_${split}2014_annotations.json`),
      "--images",
      join(synth, "images"),
    );
    await runCliOk(["--workspace", wsDir, "data", "import", ...files, "--split", split, "--name", split]);
    await runCliOk(
      ["--workspace", wsDir, "embed", "compute", "--dataset", split, "--kind", "joint"].concat([
        "--model",
        TINY_CLIP_DIR,
        "--threads",
        "1",
      ]),
    );
  }
  const config = SelectorConfigSchema.parse({ d: 16, hidden: 16, shots: 4, dropout: 0, attnDropout: 0 });
  checkpoint = join(dir, "sel.safetensors");
  saveCheckpoint(checkpoint, {
    config,
    params: initParams(config, 5),
    trainedK: 12,
    shots: 4,
    provenance: {
      stage: "init",
      createdAt: "2026-01-01T00:00:00Z",
      notes: { poolSampler: "joint-sim", embedding: "joint" },
    },
  });
}, 120_000);
afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  rmSync(dir, { recursive: true, force: true });
});

const prompts = (mock: MockVllm) =>
  mock.log
    .filter((r) => r.path === "/v1/chat/completions" && JSON.stringify(r.body).includes("Short answer:"))
    .map((r) => JSON.stringify(r.body))
    .sort();

const serveOptions = (url: string, embedModel: string) =>
  parseServeOptions({
    checkpoint,
    index: "train",
    shots: 2,
    vlm: "openai",
    baseUrls: [url],
    model: "mock-vl",
    port: 0,
    embedModel,
  });

/** `lever eval` of the selector on val at 2 shots, once for the file (its run id and the mock it sent to). */
let evaluated: Promise<{ runId: string; mock: MockVllm }> | null = null;
function evalOnce(ws: Workspace): Promise<{ runId: string; mock: MockVllm }> {
  evaluated ??= (async () => {
    const mock = await MockVllm.start();
    mocks.push(mock);
    const result = await evaluate(
      ws,
      parseEvalOptions({
        dataset: "val",
        index: "train",
        shots: [2],
        retrievers: [`selector:${checkpoint}`],
        vlm: "openai",
        baseUrls: [mock.url],
        model: "mock-vl",
        cache: "off",
        resamples: 200,
      }),
      { progress: null },
    );
    expect(result.stats).toMatchObject({ evaluated: 20, failures: 0 });
    return { runId: result.runId, mock };
  })();
  return evaluated;
}

describe("lever serve with in-process embedding (tiny CLIP)", () => {
  it("embeds each request with the index's model and sends the prompts lever eval sent", async () => {
    const ws = Workspace.open(wsDir);
    try {
      const { runId, mock: evalMock } = await evalOnce(ws);
      const servedMock = await MockVllm.start();
      mocks.push(servedMock);
      const app = await startServer(await prepareServe(ws, serveOptions(servedMock.url, TINY_CLIP_DIR)));
      try {
        const items = new Map(ws.loadItems("val").map((item) => [item.questionId, item]));
        const replies = await Promise.all(
          ws.getPredictions(runId).map(async (prediction) => {
            const item = items.get(prediction.questionId)!;
            const content = [
              { type: "image_url", image_url: { url: dataUrlOf(item) } },
              { type: "text", text: item.question },
            ];
            const reply = await post(`${app.url}/v1/chat/completions`, {
              model: "mock-vl",
              messages: [{ role: "user", content }],
            });
            return { reply, prediction };
          }),
        );
        for (const { reply, prediction } of replies) {
          expect(reply.status, reply.text).toBe(200);
          const lever = reply.json.lever as {
            answer: string;
            demonstrations: { id: string }[];
            timings: Record<string, number>;
          };
          expect(lever.demonstrations.map((d) => d.id)).toEqual(prediction.demonstrations);
          expect(lever.answer).toBe(prediction.answer);
          expect(lever.timings.embed_ms).toBeGreaterThan(0);
        }
        expect(prompts(servedMock)).toEqual(prompts(evalMock));
      } finally {
        await app.close();
      }
    } finally {
      ws.close();
    }
  });

  it("/v1/select embeds the request's image and question and chooses the demonstrations lever eval chose", async () => {
    const ws = Workspace.open(wsDir);
    try {
      const { runId } = await evalOnce(ws);
      const mock = await MockVllm.start();
      mocks.push(mock);
      const app = await startServer(await prepareServe(ws, serveOptions(mock.url, TINY_CLIP_DIR)));
      try {
        const items = new Map(ws.loadItems("val").map((item) => [item.questionId, item]));
        const index = new Map(ws.loadItems("train").map((item) => [item.questionId, item]));
        const predictions = ws.getPredictions(runId);
        expect(predictions.length).toBe(20);
        const replies = await Promise.all(
          predictions.map(async (prediction) => {
            const item = items.get(prediction.questionId)!;
            const reply = await post(`${app.url}/v1/select`, { question: item.question, image: dataUrlOf(item) });
            return { reply, prediction };
          }),
        );
        for (const { reply, prediction } of replies) {
          expect(reply.status, reply.text).toBe(200);
          const demos = reply.json.demonstrations as { id: string; image: string; answer: string; score: number }[];
          expect(demos.map((d) => d.id)).toEqual(prediction.demonstrations);
          for (const d of demos) {
            expect(d.image).toBe(index.get(d.id)!.imagePath);
            expect(d.answer).toBe(index.get(d.id)!.answer);
            expect(Number.isFinite(d.score)).toBe(true);
          }
          expect((reply.json.timings as Record<string, number>).embed_ms).toBeGreaterThan(0);
        }
        // No prompt was sent upstream (only the start-up preflight): /v1/select only chooses.
        expect(prompts(mock)).toEqual([]);
        // Valid base64 of an image type that does not decode: a 400 naming the image, one line.
        const broken = await post(`${app.url}/v1/select`, {
          question: "what is it?",
          image: `data:image/png;base64,${Buffer.from("not a png at all").toString("base64")}`,
        });
        expect(broken.status, broken.text).toBe(400);
        expect(String((broken.json.error as { message: string }).message)).not.toContain("\n");
        expect((broken.json.error as { param: string }).param).toBe("image");
        const bare = await post(`${app.url}/v1/select`, { question: "what is it?" });
        expect(bare.status).toBe(400);
        expect((bare.json.error as { message: string }).message).toMatch(
          /send an image \(data: URL\) or the embedding/,
        );
      } finally {
        await app.close();
      }
    } finally {
      ws.close();
    }
  });

  it("refuses a model folder whose files are not the ones the index was embedded with", async () => {
    const other = join(dir, "other-clip");
    cpSync(TINY_CLIP_DIR, other, { recursive: true });
    appendFileSync(join(other, "onnx", "text_model.onnx"), Buffer.from([0]));
    const ws = Workspace.open(wsDir);
    try {
      const error = await prepareServe(ws, serveOptions("http://127.0.0.1:1", other)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeverError);
      expect((error as LeverError).message).toMatch(
        /onnx\/text_model\.onnx is not the file index "train"'s joint embeddings were computed with/,
      );
    } finally {
      ws.close();
    }
  });
});
