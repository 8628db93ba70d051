import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../../src/data/item.js";
import { type RewardConfig, RewardSchema } from "../../../src/icl/rewards.js";
import { SelectorConfigSchema } from "../../../src/selector/config.js";
import { resolvePool } from "../../../src/selector/inputs.js";
import { PointerSelector } from "../../../src/selector/model.js";
import { initParams } from "../../../src/selector/params.js";
import { vqaAnswering } from "../../../src/task/vqa.js";
import type { RlGroup } from "../../../src/train/data/rl-groups.js";
import { OptimSchema } from "../../../src/train/loop/loop.js";
import { runTraining, seededStart } from "../../../src/train/loop/run.js";
import { grpoObjective } from "../../../src/train/objective/grpo.js";
import { GrpoSchema, resolveModeDefaults } from "../../../src/train/objective/grpo-settings.js";
import { type OnlineConfig, OnlineSampler, OnlineSchema } from "../../../src/train/objective/online.js";
import { RlValidator } from "../../../src/train/objective/rl-validate.js";
import { Rng } from "../../../src/util/rng.js";
import {
  type GenerateResult,
  type Outcome,
  type ScoreResult,
  type Vlm,
  type VlmPrompt,
  vlmFailure,
} from "../../../src/vlm/types.js";
import { syntheticWorld } from "../synthetic.js";

/**
 * A VLM that answers "yes" (the annotators' answer) exactly when the demonstration nearest the query
 * is the query's rewarded first ICD, and gives the annotators' answer probability 0.8 then (0.1
 * otherwise): a reward the selector can learn from its embeddings, which online GRPO must find.
 */
const world = syntheticWorld({ seed: 9, queries: 96, perConcept: 8, concepts: 6, d: 8, K: 8, noise: 0.05 });
const target = new Map(Object.entries(world.beams.queries).map(([q, b]) => [q, b.beams[0].selected[0]]));
const item = (id: string): VqaItem => ({
  questionId: id,
  imageId: `img${id}`,
  question: "is it?",
  answers: Array.from({ length: 10 }, () => ({ answer: "yes" })),
  answer: "yes",
  questionType: "is the",
  answerType: "yes/no",
  imagePath: null,
});
const hit = (p: VlmPrompt) => p.demonstrations.at(-1)?.questionId === target.get(p.query.questionId);
let calls = 0;
const vlm: Vlm = {
  id: "toy",
  async generate(prompts: VlmPrompt[]): Promise<Outcome<GenerateResult>[]> {
    calls += prompts.length;
    return prompts.map((p) => ({ text: hit(p) ? "yes" : "no", tokens: 1 }));
  },
  async scoreAnswer(requests: { prompt: VlmPrompt; answer: string }[]): Promise<Outcome<ScoreResult>[]> {
    calls += requests.length;
    return requests.map((r) => {
      const lp = Math.log(hit(r.prompt) ? 0.8 : 0.1);
      return { logprobSum: lp, logprobMean: lp, tokens: 1 };
    });
  },
};

const ids = [...world.emb.rowOf.keys()];
const byId = new Map(ids.map((id) => [id, item(id)]));
const groups: RlGroup[] = Object.keys(world.beams.queries).map((queryId) => ({
  ...resolvePool(world.sources, queryId, world.pools.pools[queryId]),
  trajectories: [],
  rewards: [],
  methods: [],
  weights: [],
  best: 0,
}));

/** An online sampler over the toy world's pools, answered by `answerVlm`. */
function toySampler(online: OnlineConfig, shots: number, reward: RewardConfig, answerVlm: Vlm): OnlineSampler {
  return new OnlineSampler(resolveModeDefaults(GrpoSchema.parse({ online })).online, {
    sources: world.sources,
    shots,
    reward,
    queryById: byId,
    indexById: byId,
    answer: { vlm: answerVlm, ...vqaAnswering("official") },
  });
}

/**
 * Online GRPO on the toy world (β = 0, batches of 12 queries, a quarter held out) from `start`:
 * the step metrics of the batches that updated (with their epoch), the skipped batches per epoch, the result.
 */
async function trainOnline(run: {
  start: PointerSelector;
  sampler: OnlineSampler;
  online: OnlineConfig;
  grpo?: object;
  seed: number;
  epochs: number;
  answerer: (queryIds: string[], selections: string[][]) => Promise<number[]>;
}) {
  const config = run.start.config;
  const steps: Record<string, number>[] = [];
  const skipped: Record<number, number> = {};
  const result = await runTraining({
    stage: "grpo",
    groups,
    valFraction: 0.25,
    seed: run.seed,
    dtype: "float64",
    optim: OptimSchema.parse({
      epochs: run.epochs,
      batchQueries: 12,
      lr: 2e-3,
      schedule: { kind: "constant", warmupRatio: 0 },
      earlyStopping: { metric: "valAccuracy" },
    }),
    start: seededStart(config, run.seed),
    objective: (model, data) =>
      grpoObjective(
        model,
        {
          train: data.train,
          sources: world.sources,
          batchQueries: 12,
          validator: new RlValidator(
            {
              groups: data.val,
              sources: world.sources,
              shots: config.shots,
              batchQueries: 12,
              answerer: run.answerer,
            },
            run.start,
          ),
        },
        resolveModeDefaults(GrpoSchema.parse({ online: run.online, kl: { beta: 0 }, ...run.grpo })),
        run.start,
        run.sampler,
      ),
    checkpointDir: null,
    checkpoint: { trainedK: 8, shots: config.shots, provenance: {} },
    onStep: (info) => {
      if (info.metrics.skipped === undefined) steps.push({ ...info.metrics, epoch: info.epoch });
      else skipped[info.epoch] = (skipped[info.epoch] ?? 0) + 1;
    },
  });
  return { steps, skipped, result, last: result.history.at(-1) as Record<string, number> };
}

describe("online GRPO", () => {
  it("samples from the current policy, scores through the VLM, and learns the rewarded choice", async () => {
    const config = SelectorConfigSchema.parse({ d: 8, hidden: 8, shots: 1, dropout: 0, attnDropout: 0 });
    const seed = 2;
    const start = new PointerSelector(config, initParams(config, new Rng(seed).child("init").seed));
    const online = OnlineSchema.parse({ enabled: true, samples: 8, gtAnswers: "all" });
    const sampler = toySampler(online, 1, RewardSchema.parse({ mode: "hybrid" }), vlm);
    const answerer = async (queryIds: string[], selections: string[][]) =>
      queryIds.map((q, i) => (selections[i].at(-1) === target.get(q) ? 1 : 0));
    const { steps, skipped, result, last } = await trainOnline({ start, sampler, online, seed, epochs: 30, answerer });
    // The samples are the current policy's: its ratio is exactly 1 at every update.
    expect(steps.every((m) => m.ratioMin === 1 && m.ratioMax === 1)).toBe(true);
    const early = steps.slice(0, 6).reduce((s, m) => s + m.sampledAccuracy, 0) / 6;
    const late = steps.slice(-6).reduce((s, m) => s + m.sampledAccuracy, 0) / 6;
    // The policy's own samples get better (chance is 1/8): on-policy learning on the training queries …
    expect(early).toBeLessThan(0.2);
    expect(late).toBeGreaterThan(early + 0.25);
    // … and the greedy choice on held-out queries too.
    expect(last.valAccuracy).toBeGreaterThan(last.valAccuracyStart);
    expect(calls).toBeGreaterThan(0);
    // An epoch's trainLoss is the mean over the batches that made an update; skipped ones are counted apart.
    result.history.forEach((h, epoch) => {
      const losses = steps.filter((m) => m.epoch === epoch).map((m) => m.loss);
      if (losses.length === 0) expect(h.trainLoss).toBeUndefined();
      else expect(h.trainLoss).toBeCloseTo(losses.reduce((a, v) => a + v, 0) / losses.length, 12);
      expect(h.skippedBatches).toBe(skipped[epoch]);
    });
  }, 60_000);

  it("prefix credit scores every prefix, credits each step with its reward-to-go, and drops a trajectory with a failed prefix", async () => {
    const config = SelectorConfigSchema.parse({ d: 8, hidden: 8, shots: 2, dropout: 0, attnDropout: 0 });
    const model = new PointerSelector(config, initParams(config, 5));
    const prompts: VlmPrompt[] = [];
    // Reward 1 only when the prompt is the target alone: the 1-shot prefix can score, the 2-shot prompt never.
    const failing = new Set([groups[0].queryId]);
    const alone = (p: VlmPrompt) => p.demonstrations.length === 1 && hit(p);
    const prefixVlm: Vlm = {
      id: "toy-prefix",
      async generate(batch) {
        prompts.push(...batch);
        return batch.map((p) =>
          failing.has(p.query.questionId) && p.demonstrations.length === 1
            ? vlmFailure("http-5xx", "injected")
            : { text: alone(p) ? "yes" : "no", tokens: 1 },
        );
      },
      async scoreAnswer(requests) {
        return requests.map((r) => {
          const lp = Math.log(alone(r.prompt) ? 0.8 : 0.1);
          return { logprobSum: lp, logprobMean: lp, tokens: 1 };
        });
      },
    };
    const sampler = (credit: "trajectory" | "prefix") =>
      toySampler(
        OnlineSchema.parse({ enabled: true, samples: 6, credit }),
        2,
        RewardSchema.parse({ mode: "hard_only", hardWeight: 1 }),
        prefixVlm,
      );
    const some = groups.slice(0, 10);
    const plain = await sampler("trajectory").sample(model, some, new Rng(3));
    // Each distinct prompt of a query is sent once: the 2-shot samples, then also their 1-shot prefixes.
    const distinct = (n: number) =>
      plain.groups.reduce((k, g) => k + new Set(g.trajectories.map((t) => t.slice(0, n).join(","))).size, 0);
    expect(plain.groups.length).toBe(10);
    expect(prompts.length).toBe(distinct(2));
    prompts.length = 0;
    const prefix = await sampler("prefix").sample(model, some, new Rng(3));
    expect(prompts.length).toBe(distinct(2) + distinct(1));
    expect(distinct(1)).toBeLessThan(10 * 6); // samples share first picks: fewer calls than S × G
    // Every trajectory of the failing query lost its 1-shot prompt: all left out, the query dropped.
    expect(prefix.stats).toMatchObject({ sampled: 60, failed: 6, droppedQueries: 1 });
    expect(prefix.groups.map((g) => g.queryId)).toEqual(plain.groups.map((g) => g.queryId).slice(1));
    for (const [b, g] of prefix.groups.entries()) {
      const same = plain.groups[b + 1];
      expect(g.trajectories).toEqual(same.trajectories); // the same draws
      g.trajectories.forEach((t, i) => {
        const first = world.pools.pools[g.queryId][t[0]];
        const r1 = first === target.get(g.queryId) ? 1 : 0;
        // the 2-shot prompt scores 0 (hard reward = its accuracy), so returns are ((r1 + 0)/2, 0)
        expect(same.rewards[i]).toBe(0);
        expect(g.returns?.[i]).toEqual([r1 / 2, 0]);
        expect(g.rewards[i]).toBe(r1 / 2);
      });
    }
  });

  it("prefix credit learns a first pick that only the 1-shot prompt rewards, where trajectory credit sees no signal", async () => {
    // The VLM is right only when the prompt is the target alone: every 2-shot prompt is wrong, so whole
    // trajectories all score 0 (zero-variance groups, dropped), and only the prefixes tell samples apart.
    const alone = (p: VlmPrompt) => p.demonstrations.length === 1 && hit(p);
    const prefixVlm: Vlm = {
      id: "toy-alone",
      async generate(batch) {
        return batch.map((p) => ({ text: alone(p) ? "yes" : "no", tokens: 1 }));
      },
      async scoreAnswer(requests) {
        return requests.map((r) => {
          const lp = Math.log(alone(r.prompt) ? 0.8 : 0.1);
          return { logprobSum: lp, logprobMean: lp, tokens: 1 };
        });
      },
    };
    const config = SelectorConfigSchema.parse({ d: 8, hidden: 8, shots: 2, dropout: 0, attnDropout: 0 });
    const train = (credit: "trajectory" | "prefix") => {
      const online = OnlineSchema.parse({ enabled: true, samples: 8, credit });
      return trainOnline({
        start: new PointerSelector(config, initParams(config, 3)),
        sampler: toySampler(online, 2, RewardSchema.parse({ mode: "hard_only", hardWeight: 1 }), prefixVlm),
        online,
        grpo: { dropZeroVariance: true, curriculum: { epochs: 2, topK: 4 } },
        seed: 4,
        epochs: 12,
        // what the evaluation at one shot would score: the first pick alone
        answerer: async (queryIds, selections) => queryIds.map((q, i) => (selections[i][0] === target.get(q) ? 1 : 0)),
      });
    };
    const plain = await train("trajectory");
    expect(plain.steps.length).toBe(0); // every group tied at 0: every batch skipped
    const prefix = await train("prefix");
    expect(prefix.steps.length).toBeGreaterThan(0);
    // Step 2's returns are all 0 (no 2-shot prompt scores): half of the (group, step) comparisons are tied.
    expect(prefix.steps.filter((m) => m.advStd > 0).length).toBeGreaterThan(prefix.steps.length / 2);
    expect(prefix.steps.every((m) => m.zeroVarianceShare >= 0.5)).toBe(true);
    expect(prefix.steps.some((m) => m.curriculumNegatives !== undefined)).toBe(true);
    expect(prefix.last.valAccuracy).toBeGreaterThan(prefix.last.valAccuracyStart + 0.2);
  }, 60_000);
});
