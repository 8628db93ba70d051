import { fileURLToPath } from "node:url";
import { AutoImageProcessor, RawImage } from "@huggingface/transformers";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClipTowers, loadClip } from "../../src/embed/clip.js";
import { resizeRgb, resizerFor, targetSize } from "../../src/embed/resize.js";
import { golden, IMAGE, TINY_CLIP_DIR } from "./tiny-clip.js";

const imagePath = (name: string) => fileURLToPath(new URL(`../fixtures/tiny-clip/images/${name}.png`, import.meta.url));

/** Mean and largest |a − b|. */
function diff(a: ArrayLike<number>, b: ArrayLike<number>): { mean: number; max: number } {
  expect(a.length).toBe(b.length);
  let sum = 0;
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    sum += d;
    max = Math.max(max, d);
  }
  return { mean: sum / a.length, max };
}

describe("targetSize", () => {
  it("sets the short side and truncates the long one, as the Python processor does", () => {
    expect(targetSize(720, 477, 224, "p")).toEqual([338, 224]); // int(224 × 720 / 477) = int(338.1)
    expect(targetSize(477, 720, { shortest_edge: 224 }, "p")).toEqual([224, 338]);
    expect(targetSize(640, 480, { shortest_edge: 224 }, "p")).toEqual([298, 224]); // 298.67 → 298
    expect(targetSize(100, 100, 224, "p")).toEqual([224, 224]);
    expect(targetSize(640, 480, { height: 20, width: 30 }, "p")).toEqual([30, 20]);
    expect(() => targetSize(640, 480, { height: 20 }, "p.json")).toThrow('p.json, field "size": "size" must be');
  });

  it("refuses a resample filter it cannot reproduce, naming the config", () => {
    expect(() => resizerFor(sharp, { resample: 1 }, "pre.json")).toThrow(
      'pre.json, field "resample": resample 1 is not supported',
    );
  });
});

describe("resizeRgb", () => {
  it("low-pass filters when shrinking: a one-pixel checkerboard halves to flat grey", async () => {
    const board = Buffer.alloc(64 * 64 * 3);
    for (let y = 0; y < 64; y++)
      for (let x = 0; x < 64; x++) board.fill((x + y) % 2 ? 255 : 0, (y * 64 + x) * 3, (y * 64 + x + 1) * 3);
    const out = await resizeRgb(sharp, board, 64, 64, [32, 32], 3);
    expect(out.length).toBe(32 * 32 * 3);
    expect(Math.min(...out)).toBeGreaterThanOrEqual(120);
    expect(Math.max(...out)).toBeLessThanOrEqual(135);
  });

  it("enlarges with pixel centres aligned: a linear ramp stays the same line inside the image", async () => {
    const ramp = Buffer.alloc(8 * 2 * 3);
    for (let y = 0; y < 2; y++) for (let x = 0; x < 8; x++) ramp.fill(32 * x, (y * 8 + x) * 3, (y * 8 + x + 1) * 3);
    const out = await resizeRgb(sharp, ramp, 8, 2, [32, 8], 3);
    for (let x = 0; x < 32; x++) {
      const source = (x + 0.5) / 4 - 0.5; // the input coordinate of output pixel x
      if (source < 1 || source > 6) continue; // the bicubic filter reaches a border
      expect(Math.abs(out[(3 * 32 + x) * 3] - 32 * source), `x = ${x}`).toBeLessThanOrEqual(1);
    }
  });
});

describe("image preprocessing against Python's CLIPImageProcessor (Pillow)", () => {
  let clip: ClipTowers;
  beforeAll(async () => {
    clip = await loadClip(TINY_CLIP_DIR, ["image"], { threads: 1 });
  });
  afterAll(() => clip.dispose());

  it.each(["shrink", "grow", "tall"])(
    // Measured: mean 0.002–0.004, max 0.03–0.10 (a few border pixels when enlarging: Pillow renormalises
    // the filter at the border, we extend the edge). The library's own resize: mean 0.02–0.18.
    "%s: pixel_values within 0.15 (mean 0.005) of the golden ones, in normalised units",
    async (name) => {
      const prepared = await clip.prepareImages([imagePath(name)]);
      const pixels = prepared.pixels as { dims: number[]; data: Float32Array };
      expect(pixels.dims).toEqual([1, 3, IMAGE, IMAGE]);
      const { mean, max } = diff(pixels.data, golden.resize[name]);
      expect(mean).toBeLessThan(0.005);
      expect(max).toBeLessThan(0.15);
    },
  );

  it("the library's own resize would not be (why src/embed/resize.ts exists)", async () => {
    const processor = await AutoImageProcessor.from_pretrained(TINY_CLIP_DIR, { local_files_only: true });
    const image = await RawImage.read(imagePath("shrink"));
    const { pixel_values } = await processor(image);
    expect(diff(pixel_values.data, golden.resize.shrink).mean).toBeGreaterThan(0.02);
  });
});
