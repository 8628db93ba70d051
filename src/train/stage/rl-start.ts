/**
 * The models an RL run starts from: its starting point (the --init checkpoint, else a seeded init of the
 * configured model; src/train/loop/run.ts `startingPoint`) as the policy's first weights and the
 * validation's reference, and the frozen KL reference — the --reference checkpoint, checked to fit the
 * run's embeddings, shots and index, else the starting weights themselves; and how many parameters train.
 */
import { type Checkpoint, checkIndexFits, checkpointFits, loadCheckpoint } from "../../selector/checkpoint.js";
import type { IndexIdentity } from "../../selector/inputs.js";
import { PointerSelector } from "../../selector/model.js";
import type { DType } from "../../tensor/tensor.js";
import { startingPoint } from "../loop/run.js";
import type { ResolvedRlInputs } from "./rl-inputs.js";
import type { ResolvedRlStageConfig, RlInputs } from "./rl-settings.js";

/** Trainable and total parameter counts, and the frozen parameter groups. */
export interface TrainableCount {
  parameters: number;
  total: number;
  frozen: string[];
}

/** The frozen KL reference checkpoint, when one is named (else the starting weights are the reference). */
function klReference(
  file: string | undefined,
  fit: { d: number; shots: number; dtype: DType; index: IndexIdentity | undefined },
): PointerSelector | undefined {
  if (file === undefined) return undefined;
  const checkpoint = loadCheckpoint(file);
  checkpointFits(checkpoint.config, fit.d, fit.shots, "KL reference", file);
  checkIndexFits(checkpoint, fit.index, file);
  return new PointerSelector(checkpoint.config, checkpoint.params, fit.dtype);
}

/** The run's starting point and its KL reference (the --reference checkpoint, else the start itself). */
export function startAndReference(
  refs: RlInputs,
  inputs: ResolvedRlInputs,
  config: ResolvedRlStageConfig,
  shots: number,
  init: Checkpoint | undefined,
) {
  const d = inputs.sources.query.dim;
  const { index, voteScale } = inputs.sources.candidates ?? {};
  const start = startingPoint({
    init,
    initFile: refs.init,
    model: config.model,
    d,
    shots,
    seed: config.seed,
    index,
    voteScale,
  });
  const startModel = new PointerSelector(start.config, start.values, config.dtype);
  const reference = klReference(refs.reference, { d, shots, dtype: config.dtype, index: start.index }) ?? startModel;
  return { start, startModel, reference };
}

/** Trainable and total parameter counts of the model with `frozen` groups. */
export function trainableCount(model: PointerSelector, frozen: string[]): TrainableCount {
  const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);
  const parameters = model.specs.filter((s) => !frozen.includes(s.group)).reduce((n, s) => n + size(s.shape), 0);
  const total = model.specs.reduce((n, s) => n + size(s.shape), 0);
  return { parameters, total, frozen };
}
