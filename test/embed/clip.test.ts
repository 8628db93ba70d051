import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CLIPTextModelWithProjection,
  CLIPVisionModelWithProjection,
  RawImage,
  Tensor,
} from "@huggingface/transformers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClipTowers, loadClip, modelFiles } from "../../src/embed/clip.js";
import { LeverError } from "../../src/util/errors.js";
import { Rng } from "../../src/util/rng.js";
import {
  DIM,
  golden,
  IMAGE,
  maxAbsDiff,
  pixelValues,
  TINY_CLIP_DIR,
  textReference,
  tokenId,
  visionReference,
} from "./tiny-clip.js";

let dir: string;
let clip: ClipTowers;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "lever-clip-"));
  clip = await loadClip(TINY_CLIP_DIR, ["image", "text"], { threads: 1 });
});
afterAll(async () => {
  await clip.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a random RGB image of the given size; returns its interleaved bytes. */
async function writeImage(path: string, width: number, height: number, seed: number): Promise<Uint8Array> {
  const rng = new Rng(seed).child("clip-test-image");
  const rgb = Uint8Array.from({ length: width * height * 3 }, () => rng.int(256));
  await new RawImage(new Uint8ClampedArray(rgb), width, height, 3).save(path);
  return rgb;
}

describe("the tiny CLIP fixture", () => {
  it("the TypeScript re-computation of both graphs reproduces the generator's numpy outputs", () => {
    const pixels = golden.pixelValues.data as Float32Array;
    expect(maxAbsDiff(visionReference(pixels, 3), golden.imageEmbeds.data as Float32Array)).toBeLessThan(1e-5);
    const ids = Array.from(golden.inputIds.data as BigInt64Array, Number);
    const mask = Array.from(golden.attentionMask.data as BigInt64Array, Number);
    const seq = golden.inputIds.shape[1];
    for (let b = 0; b < 3; b++) {
      const out = textReference(ids.slice(b * seq, (b + 1) * seq), mask.slice(b * seq, (b + 1) * seq));
      const want = (golden.textEmbeds.data as Float32Array).subarray(b * DIM, (b + 1) * DIM);
      expect(maxAbsDiff(out, want)).toBeLessThan(1e-5);
    }
  });

  it("onnxruntime, through the library's CLIP classes, gives the golden outputs from the committed .onnx files", async () => {
    const options = { local_files_only: true, dtype: "fp32", device: "cpu" } as const;
    const vision = await CLIPVisionModelWithProjection.from_pretrained(TINY_CLIP_DIR, options);
    const text = await CLIPTextModelWithProjection.from_pretrained(TINY_CLIP_DIR, options);
    try {
      const { pixelValues: px, inputIds, attentionMask } = golden;
      const image = await vision({ pixel_values: new Tensor("float32", px.data as Float32Array, px.shape) });
      expect(image.image_embeds.dims).toEqual([3, DIM]);
      expect(maxAbsDiff(image.image_embeds.data, golden.imageEmbeds.data as Float32Array)).toBeLessThan(1e-5);
      const out = await text({
        input_ids: new Tensor("int64", inputIds.data as BigInt64Array, inputIds.shape),
        attention_mask: new Tensor("int64", attentionMask.data as BigInt64Array, attentionMask.shape),
      });
      expect(maxAbsDiff(out.text_embeds.data, golden.textEmbeds.data as Float32Array)).toBeLessThan(1e-5);
    } finally {
      await vision.dispose();
      await text.dispose();
    }
  });
});

describe("loadClip", () => {
  it("measures each tower's width on a probe at load time", () => {
    expect(clip.dims).toEqual({ image: DIM, text: DIM });
  });

  it("embeds image files at the crop size exactly as the graph computes on their pixels", async () => {
    const paths = [0, 1, 2].map((k) => join(dir, `crop-${k}.png`));
    const pixels = await Promise.all(paths.map((path, k) => writeImage(path, IMAGE, IMAGE, k)));
    const prepared = await clip.prepareImages(paths);
    expect(prepared.failed).toEqual([]);
    expect(prepared.ok).toEqual([0, 1, 2]);
    const rows = await clip.embedImages(prepared);
    const input = new Float64Array(3 * 3 * IMAGE * IMAGE);
    pixels.forEach((rgb, k) => {
      input.set(pixelValues(rgb), k * 3 * IMAGE * IMAGE);
    });
    expect(maxAbsDiff(rows, visionReference(input, 3))).toBeLessThan(1e-5);
  });

  it("resizes and centre-crops other sizes with the model's preprocessor, then runs the same graph", async () => {
    const wide = join(dir, "wide.jpg");
    await writeImage(wide, 80, 48, 9);
    const prepared = await clip.prepareImages([wide]);
    const pixels = prepared.pixels as { dims: number[]; data: Float32Array };
    expect(pixels.dims).toEqual([1, 3, IMAGE, IMAGE]);
    const rows = await clip.embedImages(prepared);
    expect(maxAbsDiff(rows, visionReference(pixels.data, 1))).toBeLessThan(1e-5);
  });

  it("reports a missing and an unreadable file by name and position, and embeds the rest", async () => {
    const good = join(dir, "good.png");
    await writeImage(good, IMAGE, IMAGE, 3);
    const broken = join(dir, "broken.jpg");
    writeFileSync(broken, "this is not a JPEG");
    const prepared = await clip.prepareImages([join(dir, "absent.jpg"), good, broken]);
    expect(prepared.ok).toEqual([1]);
    expect(prepared.failed.map((f) => [f.index, f.reason, f.path])).toEqual([
      [0, "missing", join(dir, "absent.jpg")],
      [2, "unreadable", broken],
    ]);
    expect(await clip.embedImages(prepared)).toHaveLength(DIM);
  });

  it("tokenises like CLIP (lower-case, byte-level BPE with </w>, start/end tokens) and runs the text graph", async () => {
    const ids = [
      tokenId("<|startoftext|>"),
      tokenId("what</w>"),
      tokenId("is</w>"),
      tokenId("th"),
      tokenId("e"),
      tokenId("m</w>"),
      tokenId("?</w>"),
      tokenId("<|endoftext|>"),
    ];
    const rows = await clip.embedTexts(["What  is THEM?"]);
    expect(maxAbsDiff(rows, textReference(ids))).toBeLessThan(1e-5);
  });

  it("pads a batch to its longest question without changing any row", async () => {
    const texts = ["what is this?", "how are the colors on the bus in this photo?", "of"];
    const together = await clip.embedTexts(texts);
    for (const [k, text] of texts.entries()) {
      const alone = await clip.embedTexts([text]);
      expect(maxAbsDiff(together.subarray(k * DIM, (k + 1) * DIM), alone)).toBeLessThan(1e-6);
    }
  });

  it("truncates a long question to the tokenizer's 77 tokens, keeping the end token", async () => {
    const rows = await clip.embedTexts([Array.from({ length: 100 }, () => "the").join(" ")]);
    const ids = [
      tokenId("<|startoftext|>"),
      ...new Array<number>(75).fill(tokenId("the</w>")),
      tokenId("<|endoftext|>"),
    ];
    expect(maxAbsDiff(rows, textReference(ids))).toBeLessThan(1e-5);
  });
});

describe("model folder errors", () => {
  const copy = (name: string) => {
    const target = join(dir, name);
    cpSync(TINY_CLIP_DIR, target, { recursive: true });
    return target;
  };

  it("names a missing folder or file before loading anything", () => {
    expect(() => modelFiles(join(dir, "nowhere"), ["image"])).toThrow(/nowhere: model folder not found/);
    const noTokenizer = copy("no-tokenizer");
    rmSync(join(noTokenizer, "tokenizer.json"));
    expect(() => modelFiles(noTokenizer, ["text"])).toThrow(
      `${join(noTokenizer, "tokenizer.json")}: model file missing`,
    );
    expect(modelFiles(noTokenizer, ["image"]).map((f) => f.slice(noTokenizer.length + 1))).toEqual([
      "config.json",
      "preprocessor_config.json",
      "onnx/vision_model.onnx",
    ]);
    writeFileSync(join(noTokenizer, "config.json"), "{ not json");
    expect(() => modelFiles(noTokenizer, ["image"])).toThrow(/config\.json: not valid JSON/);
  });

  it("refuses an export without the projection output, naming the .onnx file", async () => {
    const swapped = copy("swapped");
    cpSync(join(TINY_CLIP_DIR, "onnx/vision_model.onnx"), join(swapped, "onnx/text_model.onnx"));
    const error = await loadClip(swapped, ["text"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeverError);
    expect((error as LeverError).message).toMatch(
      /onnx\/text_model\.onnx: the model has inputs \[pixel_values\] and outputs \[image_embeds, last_hidden_state\]; expected input "input_ids" and output "text_embeds"/,
    );
  });

  it("turns an unloadable .onnx file into a LeverError naming it", async () => {
    const garbage = copy("garbage");
    writeFileSync(join(garbage, "onnx/vision_model.onnx"), "not a protobuf");
    const error = await loadClip(garbage, ["image"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeverError);
    expect((error as LeverError).message).toMatch(/vision_model\.onnx: the CLIP model failed to load or run: /);
  });
});
