import { describe, expect, it } from "vitest";
import { RewardSchema } from "../../../src/icl/rewards.js";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { PointerSelector } from "../../../src/selector/model.js";
import { initParams } from "../../../src/selector/params.js";
import { buildRlGroups, type RlGroup } from "../../../src/train/data/rl-groups.js";
import { OptimSchema } from "../../../src/train/loop/loop.js";
import { runTraining, seededStart } from "../../../src/train/loop/run.js";
import { grpoObjective } from "../../../src/train/objective/grpo.js";
import { GrpoSchema, resolveModeDefaults } from "../../../src/train/objective/grpo-settings.js";
import { RceSchema, rceObjective } from "../../../src/train/objective/rl-objectives.js";
import { RlValidator } from "../../../src/train/objective/rl-validate.js";
import { syntheticRollouts, syntheticWorld } from "../synthetic.js";

const world = syntheticWorld({ seed: 6, queries: 64, perConcept: 8, concepts: 6, d: 8, K: 8, noise: 0.05 });
const rollouts = syntheticRollouts(world, 2);
const files = { rollouts: "r.json", pools: "p.json" };
const { groups } = buildRlGroups(rollouts, world.pools, world.sources, {
  reward: RewardSchema.parse({}),
  files,
});
const modelConfig = SelectorConfigSchema.parse({ d: 8, hidden: 8, shots: 2, dropout: 0.3, attnDropout: 0 });

async function trainGrpo(grpo: Record<string, unknown>, epochs = 3, data: RlGroup[] = groups, metric = "valRce") {
  const steps: Record<string, number>[] = [];
  const stepEpochs: number[] = [];
  // The run starts from seed 3's weights, and the KL reference must be that starting policy.
  const initial = seededStart(modelConfig, 3);
  const start = new PointerSelector(initial.config, initial.values, "float64");
  const result = await runTraining({
    stage: "grpo",
    groups: data,
    valFraction: 0.25,
    seed: 3,
    dtype: "float64",
    optim: OptimSchema.parse({
      epochs,
      batchQueries: 12,
      lr: 5e-3,
      schedule: { kind: "constant", warmupRatio: 0 },
      earlyStopping: { metric },
    }),
    start: initial,
    objective: (model, data) => {
      const validator = new RlValidator(
        { groups: data.val, sources: world.sources, shots: 2, batchQueries: 16 },
        start,
      );
      const objData = { train: data.train, sources: world.sources, batchQueries: 16, validator };
      return grpoObjective(model, objData, resolveModeDefaults(GrpoSchema.parse(grpo), "offline"), start);
    },
    checkpointDir: null,
    checkpoint: { trainedK: 8, shots: 2, provenance: {} },
    onStep: (info) => {
      steps.push(info.metrics);
      stepEpochs.push(info.epoch);
    },
  });
  return { result, steps, stepEpochs };
}

describe("GRPO objective", () => {
  it("the behaviour policy is refreshed every ppoEpochs epochs: the first ratio after a refresh is exactly 1", async () => {
    const { steps, stepEpochs } = await trainGrpo({ ppoEpochs: 2 });
    const firstOf = (e: number) => steps[stepEpochs.indexOf(e)];
    for (const e of [0, 2]) {
      expect(firstOf(e).ratioMin, `epoch ${e}`).toBe(1);
      expect(firstOf(e).ratioMax, `epoch ${e}`).toBe(1);
    }
    // Epoch 1 keeps epoch 0's behaviour snapshot: the policy has moved since.
    expect(firstOf(1).ratioMax - firstOf(1).ratioMin).toBeGreaterThan(1e-4);
    // Later steps of an epoch see the policy move away from the snapshot.
    expect(steps[1].ratioMax).toBeGreaterThan(1);
  });

  it("counts zero-variance groups, applies the curriculum, and with policy dropout off the KL starts at 0", async () => {
    const { steps, stepEpochs } = await trainGrpo({ curriculum: { epochs: 1, topK: 2 } }, 2);
    const first = steps[0];
    expect(first.kl).toBe(0); // the policy starts as the reference, no dropout on either side
    expect(first.curriculumNegatives).toBeGreaterThan(0); // top-2: the best and one with a lower reward
    expect(steps.filter((_, i) => stepEpochs[i] === 1).every((m) => m.curriculumNegatives === undefined)).toBe(true);
    expect(first.zeroVarianceShare).toBe(0);
    // Every other query with all-equal rewards: about half of each batch's groups are counted as tied.
    const tied = groups.map((g, i) => (i % 2 === 0 ? g : { ...g, rewards: g.rewards.map(() => 0.5) }));
    const shares = (await trainGrpo({}, 1, tied)).steps.map((m) => m.zeroVarianceShare);
    expect(shares.every((v) => v > 0 && v < 1)).toBe(true);
    const mean = shares.reduce((a, v) => a + v, 0) / shares.length;
    expect(mean).toBeGreaterThan(0.3);
    expect(mean).toBeLessThan(0.7);
  });

  it("a best-epoch metric the validation does not compute is an error naming the ones it does, not a silent 'last epoch'", async () => {
    await expect(trainGrpo({}, 1, groups, "valAcuracy")).rejects.toThrow(
      /"valAcuracy" is not computed by this stage's validation \(it has: .*valRce/,
    );
  });

  it("RCE's temperature follows its schedule over the run's steps", async () => {
    const temps: number[] = [];
    const start = new PointerSelector(modelConfig, initParams(modelConfig, 1));
    await runTraining({
      stage: "rce",
      groups,
      valFraction: 0.25,
      seed: 3,
      dtype: "float32",
      optim: OptimSchema.parse({ epochs: 2, batchQueries: 16, lr: 1e-3, earlyStopping: { metric: "valRce" } }),
      start: seededStart(modelConfig, 3),
      objective: (model, data) =>
        rceObjective(
          model,
          {
            train: data.train,
            sources: world.sources,
            batchQueries: 16,
            validator: new RlValidator({ groups: data.val, sources: world.sources, shots: 2, batchQueries: 16 }, start),
          },
          RceSchema.parse({ temperature: { start: 2, end: 0.5, kind: "linear" } }),
          RewardSchema.parse({}),
        ),
      checkpointDir: null,
      checkpoint: { trainedK: 8, shots: 2, provenance: {} },
      onStep: (info) => temps.push(info.metrics.temperature),
    });
    expect(temps[0]).toBe(2);
    expect(temps.at(-1)).toBeCloseTo(0.5, 12);
    for (let i = 1; i < temps.length; i++) expect(temps[i]).toBeLessThan(temps[i - 1]);
  });
});
