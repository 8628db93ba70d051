import { z } from "zod";

/**
 * Learning-rate schedules as pure functions of the optimiser step (0-based). Shared by SFT, RCE and
 * GRPO. "cosine" = linear warm-up then cosine decay to `minLrRatio`·lr (the SFT schedule of the
 * reference: Lightning cosine with warm-up over the first 5 % of steps); "constant" = optional
 * linear warm-up then flat (the RCE/GRPO schedule of the reference). The reference is Lever-Plus's
 * `train.py` and GRPO trainer (docs/provenance.md#sft, docs/provenance.md#rce).
 */
/** The schedule settings with a stage's defaults (a section's defaults must be its fields' defaults). */
export function scheduleSchema(d: { kind: "cosine" | "constant"; warmupRatio: number; minLrRatio: number }) {
  return z
    .object({
      kind: z
        .enum(["cosine", "constant"])
        .default(d.kind)
        .meta({ flag: "schedule", description: "learning-rate schedule after the warm-up" }),
      warmupRatio: z
        .number()
        .min(0)
        .max(1)
        .default(d.warmupRatio)
        .meta({ flag: "warmup", description: "fraction of the steps spent warming up linearly" }),
      minLrRatio: z
        .number()
        .min(0)
        .max(1)
        .default(d.minLrRatio)
        .meta({ flag: "min-lr-ratio", description: "final learning rate as a fraction of the peak (cosine only)" }),
    })
    .strict();
}

export const ScheduleSchema = scheduleSchema({ kind: "cosine", warmupRatio: 0.05, minLrRatio: 0 });
export type Schedule = z.infer<typeof ScheduleSchema>;

/**
 * Multiplier of the peak learning rate at `step` of `totalSteps`. Warm-up uses (step+1)/warmupSteps
 * so the first update is not wasted at lr 0.
 */
export function lrMultiplier(schedule: Schedule, step: number, totalSteps: number): number {
  const warmup = Math.round(schedule.warmupRatio * totalSteps);
  if (step < warmup) return (step + 1) / warmup;
  if (schedule.kind === "constant") return 1;
  const span = Math.max(1, totalSteps - warmup);
  const progress = Math.min(1, (step - warmup) / span);
  const cosine = 0.5 * (1 + Math.cos(Math.PI * progress));
  return schedule.minLrRatio + (1 - schedule.minLrRatio) * cosine;
}
