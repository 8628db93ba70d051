/**
 * The resize step of Hugging Face's Python CLIPImageProcessor, done with sharp (libvips), so images
 * reach the model as they do in the reference implementation (which resizes with Pillow).
 *
 * Why not the JavaScript library's own resize: it maps bicubic to an affine transform, which does
 * not low-pass filter when shrinking; on COCO-sized photos (640×480 → 224 short edge) that moves
 * the average pixel by 0.08–0.15 in normalised units (5–10 grey levels) and the pixel vectors to a
 * cosine of 0.96–0.99 against Pillow. Measured here with Pillow 9.4 on 720×477 photos and a 150×100
 * image: the routes below agree with Pillow's BICUBIC to a mean of 0.003 and a maximum of 0.06 in
 * normalised units (0.2 and 4 grey levels), see test/embed/resize.test.ts.
 *   - shrinking (neither side grows): sharp's `resize` with the matching kernel is a convolution
 *     whose support widens with the scale, as Pillow's `Image.resize` is;
 *   - enlarging: Pillow interpolates with pixel centres aligned ((x + 0.5) / s − 0.5) and clamps at
 *     the borders, which is an affine transform with the same interpolator, the output shifted by
 *     half a pixel, over the image extended by copies of its edge pixels.
 * The target size follows the Python processor too: an integer `size` (the openai/ configs) or
 * `{shortest_edge}` sets the short side and the long side is int(short × long / short);
 * `{height, width}` is used as given. Centre crop, rescale and normalisation stay with the library.
 */
import type { Sharp, SharpOptions } from "sharp";
import { LeverError } from "../util/errors.js";

type SharpFactory = (input: Buffer, options?: SharpOptions) => Sharp;

/** Pillow's resample codes (`resample` in preprocessor_config.json) and the matching libvips filters. */
const RESAMPLE: Record<
  number,
  { kernel: "nearest" | "linear" | "cubic"; interpolator: "nearest" | "bilinear" | "bicubic" }
> = {
  0: { kernel: "nearest", interpolator: "nearest" },
  2: { kernel: "linear", interpolator: "bilinear" },
  3: { kernel: "cubic", interpolator: "bicubic" },
};

/** Border added before enlarging, wider than the bicubic filter's reach (2 pixels). */
const BORDER = 4;

export type SizeSetting = number | { shortest_edge?: number; height?: number; width?: number };

/** Output [width, height] of the resize for an image of `width` × `height`. */
export function targetSize(width: number, height: number, size: SizeSetting, file: string): [number, number] {
  const shortest = typeof size === "number" ? size : size.shortest_edge;
  if (shortest !== undefined) {
    if (width <= height) return [shortest, Math.trunc((shortest * height) / width)];
    return [Math.trunc((shortest * width) / height), shortest];
  }
  if (typeof size === "object" && size.height !== undefined && size.width !== undefined)
    return [size.width, size.height];
  throw new LeverError(`"size" must be a number, {"shortest_edge"} or {"height", "width"}`, { file, field: "size" });
}

/** Checks the resample code of a preprocessor config; returns it. */
function resampleCode(resample: unknown, file: string): number {
  const code = resample ?? 2;
  if (typeof code !== "number" || RESAMPLE[code] === undefined)
    throw new LeverError(`resample ${JSON.stringify(code)} is not supported (0 nearest, 2 bilinear, 3 bicubic)`, {
      file,
      field: "resample",
    });
  return code;
}

export interface RgbImage {
  /** Interleaved RGB bytes, row-major [height, width, 3]. */
  data: Buffer;
  width: number;
  height: number;
}

/**
 * The resize a preprocessor_config.json asks for (`do_resize`, `size`, `resample`; the Python
 * defaults when absent: resize, shortest edge 224, bilinear), as a function of a decoded image.
 */
export function resizerFor(
  sharp: SharpFactory,
  config: { do_resize?: unknown; size?: unknown; resample?: unknown },
  file: string,
): (image: RgbImage) => Promise<RgbImage> {
  if (config.do_resize === false) return async (image) => image;
  const size = (config.size ?? { shortest_edge: 224 }) as SizeSetting;
  const resample = resampleCode(config.resample, file);
  targetSize(1, 1, size, file); // a malformed size is reported before any image is read
  return async (image) => {
    const [width, height] = targetSize(image.width, image.height, size, file);
    const data = await resizeRgb(sharp, image.data, image.width, image.height, [width, height], resample);
    return { data, width, height };
  };
}

/** Resizes interleaved RGB bytes [height, width, 3] to `target`; returns the resized bytes. */
export async function resizeRgb(
  sharp: SharpFactory,
  rgb: Buffer,
  width: number,
  height: number,
  [outWidth, outHeight]: [number, number],
  resample: number,
): Promise<Buffer> {
  if (outWidth === width && outHeight === height) return rgb;
  const raw = { raw: { width, height, channels: 3 as const } };
  const filter = RESAMPLE[resample];
  if (outWidth <= width && outHeight <= height)
    return sharp(rgb, raw).resize(outWidth, outHeight, { kernel: filter.kernel, fit: "fill" }).raw().toBuffer();
  const sx = outWidth / width;
  const sy = outHeight / height;
  const extended = await sharp(rgb, raw)
    .extend({ top: BORDER, bottom: BORDER, left: BORDER, right: BORDER, extendWith: "copy" })
    .raw()
    .toBuffer();
  const { data, info } = await sharp(extended, {
    raw: { width: width + 2 * BORDER, height: height + 2 * BORDER, channels: 3 },
  })
    .affine([sx, 0, 0, sy], {
      interpolator: filter.interpolator,
      idx: -BORDER,
      idy: -BORDER,
      odx: 0.5 * sx - 0.5,
      ody: 0.5 * sy - 0.5,
    })
    .raw()
    .toBuffer({ resolveWithObject: true });
  // The affine output starts at the original image's top-left corner; keep the target area.
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .extract({ left: 0, top: 0, width: outWidth, height: outHeight })
    .raw()
    .toBuffer();
}
