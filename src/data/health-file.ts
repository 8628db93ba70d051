/**
 * `health.json`, stored beside a training run's checkpoints: the health warnings its epochs raised
 * (docs/training.md, "Health warnings"). The training stage writes it, the report reads it.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";

export const HEALTH_FILE = "health.json";

export const HealthFileSchema = z.object({
  warnings: z.array(
    z.object({
      /** 0-based epoch that raised the warning. */
      epoch: z.number().int().nonnegative(),
      /** Stable code of the check (e.g. "kl-dominates"). */
      code: z.string().min(1),
      message: z.string(),
    }),
  ),
});
export type HealthFile = z.infer<typeof HealthFileSchema>;

/** The warnings of an existing health file, or null when it cannot be read or is not this format. */
export function readHealthFile(file: string): HealthFile | null {
  try {
    const parsed = HealthFileSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The file's text for these warnings. */
export function healthFileContent(warnings: HealthFile["warnings"]): string {
  return `${JSON.stringify({ warnings }, null, 2)}\n`;
}

/** How a warning reads outside its run: "epoch 2: …" (1-based, as the training log prints it). */
export function describeHealthWarning(w: HealthFile["warnings"][number]): string {
  return `epoch ${w.epoch + 1}: ${w.message}`;
}
