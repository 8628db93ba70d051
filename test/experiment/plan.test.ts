/**
 * Planning `lever run`. Stage and evaluation identities are persistent: they name the stage records of every
 * workspace (`artifacts/experiments/stages/<stage>-<id>.json`) and the evaluation runs, so a workspace made by
 * an earlier build reuses its finished stages only while the same experiment plans the same ids — now, or
 * under scheme 1 for a workspace a build up to 9255aa3 made (test/experiment/pinned-identities.ts).
 */
import { describe, expect, it } from "vitest";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { STAGE_TABLE, STAGES, type StageEntry, type StageName } from "../../src/experiment/stages.js";
import { leverErrorOf } from "../helpers/errors.js";
import { experimentFiles } from "./helpers.js";
import { OPENAI, PINNED, planned, SYNTH } from "./pinned-identities.js";

const { write } = experimentFiles("lever-identities-");

describe("stage identities stay what earlier builds planned", () => {
  it("every stage of a synthetic β × seed sweep", () => {
    expect(planned(write("synth.yaml", SYNTH))).toEqual(PINNED.synth);
  });

  it("imported data on an OpenAI-compatible server, without SFT", () => {
    expect(planned(write("openai.yaml", OPENAI))).toEqual(PINNED.openai);
  });

  it("examples/demo.yaml (a workspace that ran `lever demo`)", () => {
    expect(planned("examples/demo.yaml")).toEqual(PINNED.demo);
  });

  it("labels and inputs of the sweep's stages", () => {
    const [first, last] = [0, 3].map((i) => plan(loadExperiment(write("synth.yaml", SYNTH))).variants[i]);
    const shape = (v: typeof first) =>
      Object.fromEntries(v.stages.map((s) => [s.stage, [s.label, Object.keys(s.deps).sort()]]));
    expect(shape(first)).toEqual({
      data: ["data", []],
      pools: ["pools", ["data"]],
      beams: ["beams", ["data", "pools"]],
      sft: ["sft", ["beams", "data", "pools"]],
      rollouts: ["rollouts", ["data", "pools", "sft"]],
      rce: ["rce", ["data", "pools", "rollouts", "sft"]],
      grpo: ["grpo_beta-0.1_seed-1", ["data", "pools", "rce", "rollouts"]],
      online: ["online", ["data", "pools", "rce"]],
    });
    expect(shape(last).grpo).toEqual(["grpo_beta-0.2_seed-2", ["data", "pools", "rce", "rollouts"]]);
  });
});

describe("the plan derives from the stage table", () => {
  const BASE = `name: t
data:
  synth: { seed: 3, trainItems: 300, valItems: 60 }
pools: { sampler: mix, k: 16 }
`;

  it("every stage reads only stages before it in the table", () => {
    for (const [i, name] of STAGES.entries()) {
      const entry: StageEntry<StageName> = STAGE_TABLE[name];
      const inputs = [...entry.needs, ...(entry.uses ?? []), ...(entry.startsFrom ?? [])];
      for (const input of inputs) expect(STAGES.indexOf(input), `${name} reads ${input}`).toBeLessThan(i);
    }
  });

  it("refuses a stage without a section it needs, saying why", () => {
    const cases = [
      ["sft: {}\n", /the sft section needs a beams section \(SFT trains on beams\)/],
      ["rce: {}\n", /the rce section needs a rollouts section$/],
      ["grpo: {}\n", /the grpo section needs a rollouts section \(online GRPO is the online section\)/],
    ] as const;
    for (const [section, message] of cases) {
      const error = leverErrorOf(() => plan(loadExperiment(write("needs.yaml", BASE + section))));
      expect(error.message).toMatch(message);
      expect(error.location.field).toBe(section.split(":")[0]);
    }
  });

  it("a stage's label names the swept values of its own sections and its inputs' only", () => {
    // Rollouts without SFT do not read the beams: both variants share them, under one name.
    const file = write(
      "labels.yaml",
      `${BASE}beams: { anchors: "first:20", shots: 2, beamSize: [2, 3] }\nrollouts: { queries: "first:30", shots: 2 }\nonline: { seed: [1, 2] }\n`,
    );
    const p = plan(loadExperiment(file));
    const named = (stage: string) => p.unique.filter((u) => u.stage.stage === stage).map((u) => u.stage.label);
    expect(named("beams")).toEqual(["beams_beamSize-2", "beams_beamSize-3"]);
    expect(named("rollouts")).toEqual(["rollouts"]);
    expect(p.unique.find((u) => u.stage.stage === "rollouts")?.variants).toEqual([0, 1, 2, 3]);
    expect(named("online")).toEqual(["online_seed-1", "online_seed-2"]);
    expect(p.variants.map((v) => v.stages.find((s) => s.stage === "online")?.seedGroup)).toEqual(
      Array(4).fill("online"),
    );
  });
});
