/**
 * Supervised fine-tuning of the pointer selector on beam data: every beam is a teacher-forced
 * example (labels = pool positions in selection order), loss = per-step cross-entropy with label
 * smoothing, optionally weighted by beam rank. Validation per epoch: loss, top-1 agreement of the
 * greedy first pick with the best beam's first pick, and full-sequence agreement.
 */
import { z } from "zod";
import { greedyDecode } from "../../selector/decode.js";
import type { SelectorSources } from "../../selector/inputs.js";
import { type PointerSelector, sftLoss } from "../../selector/model.js";
import { noGrad } from "../../tensor/tensor.js";
import type { Rng } from "../../util/rng.js";
import type { QueryGroup } from "../data/groups.js";
import { type Batch, buildBatch, chunk } from "../loop/batch.js";
import type { Objective } from "../loop/loop.js";

export const SftLossSchema = z
  .object({
    labelSmoothing: z
      .number()
      .min(0)
      .lt(1)
      .default(0)
      .describe("label smoothing, spread over the positions still available at each step"),
  })
  .strict();
export type SftLossConfig = z.infer<typeof SftLossSchema>;

export interface SftData {
  train: QueryGroup[];
  val: QueryGroup[];
  sources: SelectorSources;
}

/** Loss of one packed batch; training mode uses `rng` for dropout. */
export function batchSftLoss(model: PointerSelector, batch: Batch, smoothing: number, training: boolean, rng?: Rng) {
  const enc = model.encode(batch.input, { training, rng });
  const tf = model.teacherForce(enc, batch.G, batch.labels, batch.steps);
  return sftLoss(tf, batch.labels, batch.weights, smoothing);
}

/** Validation metrics of `groups` (evaluation mode, batches of `batchQueries`). */
export function sftValidation(
  model: PointerSelector,
  groups: readonly QueryGroup[],
  sources: SelectorSources,
  smoothing: number,
  batchQueries: number,
): Record<string, number> {
  if (groups.length === 0) return {};
  let lossSum = 0;
  let weightSum = 0;
  let top1 = 0;
  let full = 0;
  noGrad(() => {
    for (const part of chunk(groups, batchQueries)) {
      const batch = buildBatch(part, sources, model.dtype);
      const w = batch.weights.reduce((a, v) => a + v, 0);
      lossSum += batchSftLoss(model, batch, smoothing, false).item() * w;
      weightSum += w;
      const enc = model.encode(batch.input);
      const picks = greedyDecode(model, enc, batch.steps);
      part.forEach((g, b) => {
        const best = g.trajectories[g.best];
        if (picks[b].positions[0] === best[0]) top1++;
        if (picks[b].positions.every((p, t) => p === best[t])) full++;
      });
    }
  });
  return { valLoss: lossSum / weightSum, valTop1: top1 / groups.length, valSeqAgree: full / groups.length };
}

export function sftObjective(
  model: PointerSelector,
  data: SftData,
  loss: SftLossConfig,
  batchQueries: number,
): Objective<QueryGroup> {
  return {
    batchLoss(groups, ctx) {
      const batch = buildBatch(groups, data.sources, model.dtype);
      return {
        loss: batchSftLoss(model, batch, loss.labelSmoothing, true, ctx.rng),
        metrics: { rows: groups.length * batch.G },
      };
    },
    validate() {
      return sftValidation(model, data.val, data.sources, loss.labelSmoothing, batchQueries);
    },
  };
}
