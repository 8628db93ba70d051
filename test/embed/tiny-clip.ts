/**
 * The committed tiny CLIP fixture (test/fixtures/tiny-clip, made by make_tiny_clip.py) and an
 * independent TypeScript re-computation of its two graphs from the weights in reference.safetensors,
 * in float64, written from the graph description in the generator's docstring (not from its code):
 *   vision: h_p = tanh(conv8x8(pixels)_p + bias + pos_p), image_embeds = mean_p(h_p) @ Wv
 *   text:   h_s = tanh((tok[id_s] + pos_s) @ W1 + b1), text_embeds = (Σ mask_s h_s / Σ mask_s) @ Wt
 * plus the CLIP image preprocessing for images already at the crop size (no resize, no crop):
 * (v / 255 − mean) / std per channel, channels first.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { readSafetensors } from "../../src/data/safetensors.js";

export const TINY_CLIP_DIR = fileURLToPath(new URL("../fixtures/tiny-clip/model", import.meta.url));
const REFERENCE = fileURLToPath(new URL("../fixtures/tiny-clip/reference.safetensors", import.meta.url));

export const IMAGE = 32;
const PATCH = 8;
const HIDDEN = 16;
export const DIM = 16;

const file = readSafetensors(REFERENCE);
const f32 = (name: string) => file.tensors.get(name)!.data as Float32Array;
const tensor = (name: string) => file.tensors.get(name)!;

/**
 * Golden inputs and the numpy outputs the generator computed for them; `resize` holds the
 * pixel_values Python's CLIPImageProcessor (Pillow) gives for test/fixtures/tiny-clip/images/*.png.
 */
export const golden = {
  pixelValues: tensor("golden.pixel_values"),
  imageEmbeds: tensor("golden.image_embeds"),
  inputIds: tensor("golden.input_ids"),
  attentionMask: tensor("golden.attention_mask"),
  textEmbeds: tensor("golden.text_embeds"),
  resize: Object.fromEntries(["shrink", "grow", "tall"].map((name) => [name, f32(`golden.resize.${name}`)])) as Record<
    string,
    Float32Array
  >,
};

const preprocessor = JSON.parse(readFileSync(`${TINY_CLIP_DIR}/preprocessor_config.json`, "utf8")) as {
  image_mean: number[];
  image_std: number[];
};
const vocab = (
  JSON.parse(readFileSync(`${TINY_CLIP_DIR}/tokenizer.json`, "utf8")) as { model: { vocab: Record<string, number> } }
).model.vocab;

/** Token id of a vocabulary entry (e.g. "what</w>", "<|endoftext|>"). */
export function tokenId(token: string): number {
  const id = vocab[token];
  if (id === undefined) throw new Error(`no token ${token}`);
  return id;
}

/** pixel_values [3, 32, 32] of a 32×32 RGB image given as interleaved bytes (HWC). */
export function pixelValues(rgb: Uint8Array): Float64Array {
  const out = new Float64Array(3 * IMAGE * IMAGE);
  for (let y = 0; y < IMAGE; y++)
    for (let x = 0; x < IMAGE; x++)
      for (let c = 0; c < 3; c++)
        out[c * IMAGE * IMAGE + y * IMAGE + x] =
          (rgb[(y * IMAGE + x) * 3 + c] / 255 - preprocessor.image_mean[c]) / preprocessor.image_std[c];
  return out;
}

/** image_embeds [batch, 16] of pixel_values [batch, 3, 32, 32]. */
export function visionReference(pixels: ArrayLike<number>, batch: number): Float64Array {
  const kernel = f32("vision.patch_weight"); // [HIDDEN, 3, 8, 8]
  const bias = f32("vision.patch_bias");
  const pos = f32("vision.position"); // [16 patches, HIDDEN]
  const proj = f32("vision.projection"); // [HIDDEN, DIM]
  const grid = IMAGE / PATCH;
  const out = new Float64Array(batch * DIM);
  for (let b = 0; b < batch; b++) {
    const pooled = new Float64Array(HIDDEN);
    for (let gy = 0; gy < grid; gy++)
      for (let gx = 0; gx < grid; gx++) {
        const p = gy * grid + gx;
        for (let o = 0; o < HIDDEN; o++) {
          let sum = bias[o] + pos[p * HIDDEN + o];
          for (let c = 0; c < 3; c++)
            for (let ky = 0; ky < PATCH; ky++)
              for (let kx = 0; kx < PATCH; kx++)
                sum +=
                  kernel[((o * 3 + c) * PATCH + ky) * PATCH + kx] *
                  pixels[((b * 3 + c) * IMAGE + gy * PATCH + ky) * IMAGE + gx * PATCH + kx];
          pooled[o] += Math.tanh(sum) / (grid * grid);
        }
      }
    for (let d = 0; d < DIM; d++) {
      let sum = 0;
      for (let o = 0; o < HIDDEN; o++) sum += pooled[o] * proj[o * DIM + d];
      out[b * DIM + d] = sum;
    }
  }
  return out;
}

/** text_embeds [1, 16] of one token sequence (all positions attended). */
export function textReference(ids: readonly number[], mask: readonly number[] = ids.map(() => 1)): Float64Array {
  const tok = f32("text.token");
  const pos = f32("text.position");
  const w1 = f32("text.w1");
  const b1 = f32("text.b1");
  const proj = f32("text.projection");
  const pooled = new Float64Array(HIDDEN);
  let count = 0;
  ids.forEach((id, s) => {
    if (mask[s] === 0) return;
    count++;
    for (let o = 0; o < HIDDEN; o++) {
      let sum = b1[o];
      for (let i = 0; i < HIDDEN; i++) sum += (tok[id * HIDDEN + i] + pos[s * HIDDEN + i]) * w1[i * HIDDEN + o];
      pooled[o] += Math.tanh(sum);
    }
  });
  const out = new Float64Array(DIM);
  for (let d = 0; d < DIM; d++) {
    let sum = 0;
    for (let o = 0; o < HIDDEN; o++) sum += (pooled[o] / count) * proj[o * DIM + d];
    out[d] = sum;
  }
  return out;
}

/** `v` / ‖v‖₂. */
export function unit(v: ArrayLike<number>): Float64Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  return Float64Array.from({ length: v.length }, (_, i) => v[i] / norm);
}

/** Largest |a − b| over two equal-length vectors. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} ≠ ${b.length}`);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}
