/**
 * What an RL run records: its stored config — the inputs as resolved paths, their hashes, the stage's
 * resolved config and the VLM settings when validation answers or online sampling ask the VLM — which is
 * the run's identity (src/store/stage-run.ts) and what `lever train resume` reads back (`StoredSchema`),
 * and the provenance every checkpoint of the run carries (src/icl/trained-with.ts reads it back).
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { hashValue } from "../../util/hash.js";
import type { VlmSettings } from "../../vlm/settings.js";
import type { ResolvedRlInputs } from "./rl-inputs.js";
import {
  onlineOf,
  type ResolvedRlStageConfig,
  type ResolvedRlStageSettings,
  type RlInputs,
  RlInputsSchema,
  type RlStage,
} from "./rl-settings.js";

/** The stored run config: inputs (as resolved paths), their hashes, the stage config and the VLM settings. */
export function storedConfig<S extends RlStage>(
  settings: ResolvedRlStageSettings<S>,
  inputs: RlInputs,
  hashes: Record<string, string>,
  vlm: VlmSettings,
) {
  const abs = (p: string | undefined) => (p !== undefined && existsSync(p) ? resolve(p) : p);
  return {
    stage: settings.stage,
    inputs: {
      ...inputs,
      rollouts: abs(inputs.rollouts),
      pools: abs(inputs.pools),
      init: abs(inputs.init),
      reference: abs(inputs.reference),
    },
    dataHashes: hashes,
    config: settings.config,
    vlm: settings.config.validation.answers || onlineOf(settings) !== null ? vlm : null,
  };
}

export const StoredSchema = z.object({
  stage: z.enum(["rce", "grpo"]),
  inputs: RlInputsSchema,
  dataHashes: z.record(z.string(), z.string()),
  config: z.unknown(),
  vlm: z.unknown(),
});

/** What every checkpoint of the run records of where it came from. */
export function provenance(runId: string, config: ResolvedRlStageConfig, refs: RlInputs, inputs: ResolvedRlInputs) {
  const { pools } = inputs.data;
  return {
    runId,
    dataHashes: inputs.dataHashes,
    notes: {
      promptOrder: inputs.promptOrder,
      configHash: hashValue(config),
      parent: refs.init !== undefined ? resolve(refs.init) : "seeded init",
      ...(pools !== null ? { poolSampler: pools.set.sampler } : {}),
      embedding: inputs.embedding,
    },
  };
}
