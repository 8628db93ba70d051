/**
 * `world.json`, the file a synthetic dataset carries beside its data (written last, so its presence
 * means the dataset is complete): the world's format tag, parameters and seed (not the latents), the
 * fingerprint of the generated world and its item counts. The `sim` backend rebuilds the world from
 * it (src/icl/backend.ts reads the format first: the VQA world or the caption world).
 */
import { z } from "zod";

/** The schema of a world file of one format, with that world's parameter schema. */
export function worldFileSchema<F extends string, P extends z.ZodType>(format: F, params: P) {
  return z.object({
    format: z.literal(format),
    params,
    fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
    counts: z.object({ train: z.number().int(), val: z.number().int() }),
  });
}

/** What a generated world offers its file. */
export interface FileWorld<P> {
  params: P;
  fingerprint: string;
  itemsOf(split: "train" | "val"): readonly unknown[];
}

/** The file content of a generated world. */
export function worldFileRecord<F extends string, P>(format: F, world: FileWorld<P>) {
  return {
    format,
    params: world.params,
    fingerprint: world.fingerprint,
    counts: { train: world.itemsOf("train").length, val: world.itemsOf("val").length },
  };
}
