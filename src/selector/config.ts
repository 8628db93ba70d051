import { z } from "zod";

/**
 * Configuration of the Lever-Plus pointer selector (spec §5.4–§5.6). One model with options
 * instead of one class per variant:
 *   stateUpdate "none" → v2 before 2025-12-25 (constant query state),
 *               "gate" → V4-1 (= v2/v3 after 2025-12-25),
 *               "gru"  → V4-2 (GRUCell decoder);
 *   redundancy  "max"  → V4-3 learnable MMR penalty (per-step λ_t);
 *   stepEmbedding      → V4-2/V4-3 `step_emb` table (rows = shots).
 * The pool size K is not part of the config: it comes from the pool at run time.
 */
export const SelectorConfigSchema = z
  .object({
    /** Input embedding width (512 for CLIP ViT-B/32). */
    d: z.number().int().positive(),
    /** Hidden width H; input_proj is the identity (no parameter) when d = H. */
    hidden: z.number().int().positive().default(256),
    heads: z.number().int().positive().default(1),
    layers: z.number().int().nonnegative().default(1),
    /** Dropout on the enhanced query and the projected candidates (reference `self.dropout`). */
    dropout: z.number().min(0).lt(1).default(0.5),
    /** Dropout on the attention weights inside each MultiheadAttention. */
    attnDropout: z.number().min(0).lt(1).default(0.1),
    /** Fixed (not learned) softmax temperature of the pointer scores. */
    temperature: z.number().positive().default(0.1),
    /** Number of demonstrations the model was built for (step tables have this many rows). */
    shots: z.number().int().positive().default(2),
    stateUpdate: z.enum(["none", "gate", "gru"]).default("gate"),
    stepEmbedding: z.boolean().default(false),
    redundancy: z.enum(["none", "max"]).default("none"),
  })
  .strict()
  .refine((c) => c.hidden % c.heads === 0, { message: "hidden must be divisible by heads", path: ["heads"] });

export type SelectorConfig = z.infer<typeof SelectorConfigSchema>;
export type SelectorConfigInput = z.input<typeof SelectorConfigSchema>;

/** Human-readable variant name used in checkpoint metadata and `selector inspect`. */
export function variantName(config: SelectorConfig): string {
  if (config.stateUpdate === "gru" && config.redundancy === "max") return "v4-3";
  if (config.stateUpdate === "gru") return "v4-2";
  if (config.redundancy === "max") return `${config.stateUpdate === "gate" ? "v4-1" : "v2"}+mmr`;
  return config.stateUpdate === "gate" ? "v4-1" : "v2";
}
