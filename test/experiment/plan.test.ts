/**
 * Planning `lever run`. Stage and evaluation identities are persistent: they name the stage records of every workspace
 * (`artifacts/experiments/stages/<stage>-<id>.json`) and the evaluation runs, so a workspace made by an
 * earlier build reuses its finished stages only while the same experiment plans the same ids. These
 * values were computed by the build before the stage table (commit e39fe92) for data, pools, beams and
 * the evaluation; the training stages and those after them changed once, deliberately, when new training
 * runs got the answer features and their learning-rate multiplier by default (issue 17; the defaults
 * differ, so the runs are different runs), and again with issue 23: new training runs read the rank prior,
 * centred embeddings and a calibrated vote scale (trained stages and those after them), every evaluation's
 * `vote` rows are rank-weighted (the evaluation ids), and the demo's pools are joint-sim (all its stages
 * after data). Any other change here strands every existing workspace's finished work.
 */
import { describe, expect, it } from "vitest";
import { loadExperiment } from "../../src/experiment/load.js";
import { plan } from "../../src/experiment/plan.js";
import { STAGE_TABLE, STAGES, type StageEntry, type StageName } from "../../src/experiment/stages.js";
import { leverErrorOf } from "../helpers/errors.js";
import { experimentFiles } from "./helpers.js";

const { write } = experimentFiles("lever-identities-");

/** Every stage, a β × seed sweep, operational settings set (they must not count). */
const SYNTH = `name: pin
data:
  synth: { seed: 3, trainItems: 300, valItems: 60 }
pools: { sampler: mix, k: 16 }
beams: { anchors: "first:20", shots: 2, concurrency: 4 }
sft: { optim: { epochs: 1 } }
rollouts: { queries: "first:30", shots: 2 }
rce: { optim: { epochs: 1 } }
grpo:
  kl: { beta: [0.1, 0.2] }
  seed: [1, 2]
online:
  online: { queries: "first:24", samples: 4 }
eval: { queries: all, shots: [1, 2], batchSize: 4 }
`;

/** Imported files, an OpenAI-compatible server, no SFT (rollouts and RCE start from scratch), RCE validation answered by the VLM. */
const OPENAI = `name: pin-openai
data:
  import:
    train: { questions: /nowhere/q-train.json, annotations: /nowhere/a-train.json }
    val: { questions: /nowhere/q-val.json, annotations: /nowhere/a-val.json, subset: "first:50" }
    embeddings:
      train: { joint: /nowhere/train.npy }
      val: { joint: /nowhere/val.npy }
pools: { sampler: random, k: 8 }
vlm: { vlm: openai, baseUrls: ["http://a:8000"], model: m, answerSpan: decoded, timeoutMs: 1000 }
beams: { anchors: "first:10", shots: 2 }
rollouts: { queries: "first:10", shots: 2 }
rce: { optim: { epochs: 1 }, validation: { answers: true } }
grpo: { optim: { epochs: 1 } }
eval: { queries: "first:10", shots: [1] }
`;

/** stage → [id, label, its inputs' stages] of each variant, and the evaluation's id. */
function identities(file: string) {
  return plan(loadExperiment(file)).variants.map((v) => ({
    evalId: v.evalId,
    stages: Object.fromEntries(v.stages.map((s) => [s.stage, [s.id, s.label, Object.keys(s.deps).sort()]])),
  }));
}

describe("stage identities stay what earlier builds planned", () => {
  it("every stage of a synthetic β × seed sweep", () => {
    const shared = {
      data: ["5b381a23c1", "data", []],
      pools: ["d851471d52", "pools", ["data"]],
      beams: ["8f37736ecf", "beams", ["data", "pools"]],
      sft: ["2d363a2be0", "sft", ["beams", "data", "pools"]],
      rollouts: ["590acc20d1", "rollouts", ["data", "pools", "sft"]],
      rce: ["aa1f6e1d60", "rce", ["data", "pools", "rollouts", "sft"]],
      // Changed on purpose (issue 17): an online section without kl.beta / online.credit now trains with
      // the online defaults (β 0.5, prefix credit; grpo-settings.ts MODE_DEFAULTS), so it is a new stage.
      online: ["372fbed63b", "online", ["data", "pools", "rce"]],
    };
    const grpo = (id: string, label: string) => [id, label, ["data", "pools", "rce", "rollouts"]];
    expect(identities(write("synth.yaml", SYNTH))).toEqual([
      { evalId: "84757756ab", stages: { ...shared, grpo: grpo("6d249c1d53", "grpo_beta-0.1_seed-1") } },
      { evalId: "84757756ab", stages: { ...shared, grpo: grpo("93a34677f0", "grpo_beta-0.1_seed-2") } },
      { evalId: "84757756ab", stages: { ...shared, grpo: grpo("e4dc340aa7", "grpo_beta-0.2_seed-1") } },
      { evalId: "84757756ab", stages: { ...shared, grpo: grpo("326e0e31a6", "grpo_beta-0.2_seed-2") } },
    ]);
  });

  it("imported data on an OpenAI-compatible server, without SFT", () => {
    expect(identities(write("openai.yaml", OPENAI))).toEqual([
      {
        evalId: "84837eb3ff",
        stages: {
          data: ["8eca2d5ac7", "data", []],
          pools: ["c14bb4c584", "pools", ["data"]],
          beams: ["04bc50efa3", "beams", ["data", "pools"]],
          rollouts: ["25a884db41", "rollouts", ["data", "pools"]],
          rce: ["0e3addc0b7", "rce", ["data", "pools", "rollouts"]],
          grpo: ["5d55741251", "grpo", ["data", "pools", "rce", "rollouts"]],
        },
      },
    ]);
  });

  it("examples/demo.yaml (a workspace that ran `lever demo`)", () => {
    const [demo] = identities("examples/demo.yaml");
    expect(demo.evalId).toBe("35d9d3ffd9");
    expect(Object.fromEntries(Object.entries(demo.stages).map(([stage, [id]]) => [stage, id]))).toEqual({
      data: "e33c52d128",
      pools: "fc0d2e2444",
      beams: "132f4ceef8",
      sft: "a13027d404",
      rollouts: "da8aa1efa8",
      // rce, grpo, online: the training default prior became the cosine prior (issue 23); they hash their model
      // settings although they start from SFT's checkpoint, whose model wins (issue 26, point 1).
      rce: "2376d43a98",
      grpo: "2d0cb14d53",
      online: "a7374bb424", // prefix credit by default since issue 17 (β 0.5 was already the demo's)
    });
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
