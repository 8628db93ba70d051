import { z } from "zod";

/**
 * Learning-rate schedules as pure functions of the optimiser step (0-based). Shared by SFT, RCE and
 * GRPO. "cosine" = linear warm-up then cosine decay to `minLrRatio`·lr (the SFT schedule of the
 * reference: Lightning cosine with warm-up over the first 5 % of steps); "constant" = optional
 * linear warm-up then flat (the RCE/GRPO schedule of the reference).
 */
export const ScheduleSchema = z
  .object({
    kind: z
      .enum(["cosine", "constant"])
      .default("cosine")
      .meta({ flag: "schedule", description: "learning-rate schedule after the warm-up" }),
    warmupRatio: z
      .number()
      .min(0)
      .max(1)
      .default(0.05)
      .meta({ flag: "warmup", description: "fraction of the steps spent warming up linearly" }),
    minLrRatio: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .meta({ flag: "min-lr-ratio", description: "final learning rate as a fraction of the peak (cosine only)" }),
  })
  .strict();
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
