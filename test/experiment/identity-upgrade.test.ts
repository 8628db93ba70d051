/**
 * A build with settings added (issue 26, point 1): this file's modules are mocked so that one setting
 * with a default is added to the data (synthetic world), the pools, the beams, the rollouts, the
 * selector model of every training stage (an object of defaults), their reward, the OpenAI client and
 * the evaluation — as a release that adds settings would. Every identity stays what this build pins
 * (test/experiment/pinned-identities.ts), now and under scheme 1; an added setting set to its default
 * is the same as unset; set to another value, it changes the identities it reaches and only those; and
 * the workspace the build at 9255aa3 made is still reused in full.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { experimentFiles } from "./helpers.js";
import type { Pinned } from "./pinned-identities.js";

type Pinning = typeof import("./pinned-identities.js");
let loadExperiment: typeof import("../../src/experiment/load.js").loadExperiment;
let planned: Pinning["planned"];
let PINNED: Pinning["PINNED"];
let fixture: typeof import("./upgrade-fixture.js");
let synth: string;
let openai: string;

/** The modules this file replaces, each with its added setting. */
const MOCKED: string[] = [];
const mock = (path: string, factory: (original: <T>() => Promise<T>) => Promise<unknown>) => {
  MOCKED.push(path);
  vi.doMock(path, factory as never);
};

// Test files share their worker's module cache (vitest.config.ts: isolate false), so the experiment
// schemas may already be loaded unmocked: drop the cache, mock, and load them afresh; the files after
// this one in the worker load the real modules again.
beforeAll(async () => {
  vi.resetModules();
  mockAddedSettings();
  ({ loadExperiment } = await import("../../src/experiment/load.js"));
  const pinning = await import("./pinned-identities.js");
  ({ planned, PINNED } = pinning);
  fixture = await import("./upgrade-fixture.js");
  synth = write("synth.yaml", pinning.SYNTH);
  openai = write("openai.yaml", pinning.OPENAI);
});

afterAll(() => {
  for (const path of MOCKED) vi.doUnmock(path);
  vi.resetModules();
});

function mockAddedSettings(): void {
  mock("../../src/sim/params.js", async (original) => {
    const m = await original<typeof import("../../src/sim/params.js")>();
    return { ...m, WorldParamsSchema: m.WorldParamsSchema.extend({ addedWorld: z.number().default(0.5) }) };
  });
  mock("../../src/pools/stage.js", async (original) => {
    const m = await original<typeof import("../../src/pools/stage.js")>();
    return { ...m, PoolsFieldsSchema: m.PoolsFieldsSchema.extend({ addedPools: z.boolean().default(false) }) };
  });
  mock("../../src/datagen/beams-stage.js", async (original) => {
    const m = await original<typeof import("../../src/datagen/beams-stage.js")>();
    return { ...m, BeamsSettingsSchema: m.BeamsSettingsSchema.extend({ addedBeams: z.number().default(1) }) };
  });
  mock("../../src/datagen/rollouts-stage.js", async (original) => {
    const m = await original<typeof import("../../src/datagen/rollouts-stage.js")>();
    return {
      ...m,
      RolloutsSettingsSchema: m.RolloutsSettingsSchema.extend({ addedRollouts: z.string().default("same") }),
    };
  });
  mock("../../src/selector/config.js", async (original) => {
    const m = await original<typeof import("../../src/selector/config.js")>();
    const block = z.object({ size: z.number().default(3), on: z.boolean().default(true) }).strict();
    return { ...m, ModelOptionsSchema: m.ModelOptionsSchema.safeExtend({ addedBlock: block.prefault({}) }) };
  });
  mock("../../src/icl/rewards.js", async (original) => {
    const m = await original<typeof import("../../src/icl/rewards.js")>();
    return { ...m, RewardSchema: m.RewardSchema.extend({ addedReward: z.number().default(0) }) };
  });
  mock("../../src/vlm/openai-settings.js", async (original) => {
    const m = await original<typeof import("../../src/vlm/openai-settings.js")>();
    return { ...m, openAiVlmConfigSchema: m.openAiVlmConfigSchema.extend({ topP: z.number().default(1) }) };
  });
  mock("../../src/eval/config.js", async (original) => {
    const m = await original<typeof import("../../src/eval/config.js")>();
    const { parseFlags } = await import("../../src/util/validate.js");
    const added = { addedEval: z.number().default(2) };
    const options = m.EvalOptionsSchema.safeExtend(added);
    return {
      ...m,
      EvalSettingsSchema: m.EvalSettingsSchema.extend(added),
      EvalOptionsSchema: options,
      parseEvalOptions: (raw: unknown) => parseFlags(options, raw),
    };
  });
}

const { write } = experimentFiles("lever-identity-upgrade-");

/** The explicit defaults of the added settings, as `--set`s. */
const DEFAULTS = [
  "data.synth.addedWorld=0.5",
  "pools.addedPools=false",
  "beams.addedBeams=1",
  "rollouts.addedRollouts=same",
  "sft.model.addedBlock.size=3",
  "rce.model.addedBlock={size: 3, on: true}",
  "grpo.reward.addedReward=0",
  "online.model.addedBlock.on=true",
  "eval.addedEval=2",
];

/** The pinned identities with `stages` changed (`legacy` of those: null) and every other left as it is. */
function changed(pinned: Pinned, stages: string[], evalChanged: boolean): Pinned {
  return pinned.map((v) => ({
    eval: evalChanged ? { id: expect.not.stringMatching(`^${v.eval.id}$`), legacy: null } : v.eval,
    stages: Object.fromEntries(
      Object.entries(v.stages).map(([stage, ids]) => [
        stage,
        stages.includes(stage) ? { id: expect.not.stringMatching(`^${ids.id}$`), legacy: null } : ids,
      ]),
    ),
  })) as Pinned;
}

describe("a build with settings added (each with a default)", () => {
  it("parses the added settings (the mocks reach the experiment schema)", () => {
    const e = loadExperiment(synth).variants[0].experiment;
    expect(e.data.synth).toMatchObject({ addedWorld: 0.5 });
    expect(e.pools).toMatchObject({ addedPools: false });
    expect(e.rce?.model).toMatchObject({ addedBlock: { size: 3, on: true } });
    expect(e.grpo?.reward).toMatchObject({ addedReward: 0 });
    expect(e.vlm).toMatchObject({ topP: 1 });
    expect(e.eval).toMatchObject({ addedEval: 2 });
  });

  it("plans every pinned identity unchanged, now and under scheme 1, unset or set to the default", () => {
    expect(planned(synth)).toEqual(PINNED.synth);
    expect(planned(openai)).toEqual(PINNED.openai);
    expect(planned("examples/demo.yaml")).toEqual(PINNED.demo);
    expect(planned(synth, DEFAULTS)).toEqual(PINNED.synth);
    expect(planned(openai, ["vlm.topP=1", "rce.reward.addedReward=0"])).toEqual(PINNED.openai);
  });

  it("set to another value, an added setting changes the identities it reaches, and only those", () => {
    expect(planned(synth, ["rce.reward.addedReward=0.3"])).toEqual(
      changed(PINNED.synth, ["rce", "grpo", "online"], false),
    );
    expect(planned(synth, ["sft.model.addedBlock.on=false"])).toEqual(
      changed(PINNED.synth, ["sft", "rollouts", "rce", "grpo", "online"], false),
    );
    expect(planned(synth, ["eval.addedEval=3"])).toEqual(changed(PINNED.synth, [], true));
    // The client's setting reaches every stage that asks the server, and the evaluation…
    expect(planned(openai, ["vlm.topP=0.9"])).toEqual(
      changed(PINNED.openai, ["beams", "rollouts", "rce", "grpo"], true),
    );
    // …and no stage on the simulator, which has none of the client's settings.
    expect(planned(synth, ["vlm.topP=0.9"])).toEqual(PINNED.synth);
  });

  it("reuses the workspace the build at 9255aa3 made in full", async () => {
    fixture.expectReusedInFull(await fixture.runOnFixtureCopy());
  }, 120_000);
});
