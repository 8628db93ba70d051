/**
 * Identities (src/experiment/identity.ts): only what can change a result, in canonical form, relative to
 * the frozen baseline (src/experiment/identity-baseline.ts), the VLM as the chosen backend's settings only.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { IDENTITY_BASELINE, type IdentitySection } from "../../src/experiment/identity-baseline.js";
import { ExperimentSchema } from "../../src/experiment/schema.js";
import { STAGES } from "../../src/experiment/stages.js";
import { type SettingsNode, settingsNode } from "../../src/util/canonical-settings.js";
import { canonicalJson } from "../../src/util/hash.js";
import { isOperational, objectShapeOf } from "../../src/util/operational.js";
import { experimentFiles } from "./helpers.js";
import { PINNED, planned, SYNTH } from "./pinned-identities.js";

const { write } = experimentFiles("lever-identity-");
const synth = write("synth.yaml", SYNTH);

/** Every setting with a default (dotted path), with what the baseline says of it: missing, or its default differs now. */
function againstBaseline(schema: z.ZodType, baseline: SettingsNode | undefined, path: string): string[] {
  const shape = objectShapeOf(schema) ?? {};
  return Object.entries(shape).flatMap(([key, field]) => {
    if (isOperational(field) || (path === "eval" && key === "baselines")) return [];
    const here = `${path}.${key}`;
    const node = settingsNode(field);
    const frozen = baseline?.fields?.[key];
    if (node.fields !== undefined) return againstBaseline(field, frozen, here);
    if (!("default" in node)) return [];
    if (frozen === undefined)
      return [`${here} has no baseline: add { path: "${here}", node: ${canonicalJson(node)} } to ADDED_SINCE_V1`];
    return canonicalJson(frozen.default) === canonicalJson(node.default)
      ? []
      : [`${here}: default ${canonicalJson(node.default)}, baseline ${canonicalJson(frozen.default)}`];
  });
}

describe("the identity baseline", () => {
  it("has every setting with a default, at the default it has now", () => {
    const sections: IdentitySection[] = [...STAGES, "vlm", "eval", "guard"];
    const found = sections.flatMap((s) => againstBaseline(ExperimentSchema.shape[s], IDENTITY_BASELINE[s], s));
    // A default changed since the baseline is hashed where it applies (its stages' identities change, as their
    // results do): list it here, with why, when changing it on purpose. None so far.
    expect(found).toEqual([]);
  });
});

describe("stage identities", () => {
  it("are the same with a setting unset or set to its default, and with any operational setting", () => {
    const sets = [
      "sft.optim.lr=0.0001",
      "rce.reward={mode: hard_plus_soft}",
      "pools.seed=0",
      "beams.concurrency=2",
      "rollouts.concurrency=1",
      "eval.batchSize=8",
      "vlm.cache=on",
    ];
    expect(planned(synth, sets)).toEqual(PINNED.synth);
  });

  it("of a simulator stage hold none of the OpenAI client's settings (scheme 1 held them all)", () => {
    const plans = planned(synth, ["vlm.temperature=0.5", "vlm.layout=chat-turns"]);
    for (const [i, v] of plans.entries()) {
      expect(Object.fromEntries(Object.entries(v.stages).map(([s, ids]) => [s, ids.id]))).toEqual(
        Object.fromEntries(Object.entries(PINNED.synth[i].stages).map(([s, ids]) => [s, ids.id])),
      );
      // Under scheme 1 the stages that ask the VLM (and the evaluation) had other identities.
      expect(v.stages.beams.legacy).not.toBe(PINNED.synth[i].stages.beams.legacy);
      expect(v.stages.pools.legacy).toBe(PINNED.synth[i].stages.pools.legacy);
    }
  });

  it("the evaluation's leaves out the summary's settings, which the stored predictions do not depend on", () => {
    const [v] = planned(synth, ["eval.resamples=500", "eval.clusterByImage=true"]);
    expect(v.eval.id).toBe(PINNED.synth[0].eval.id);
    expect(v.eval.legacy).not.toBe(PINNED.synth[0].eval.legacy);
    expect(planned(synth, ["eval.seed=1"])[0].eval.id).not.toBe(PINNED.synth[0].eval.id);
  });
});
