/**
 * On-policy data for GRPO (`lever train grpo --online`): for every query of a batch, draw G
 * trajectories from the CURRENT policy (softmax of its step scores at a sampling temperature, seeded
 * per step), answer and score them through the rollout scorer — the evaluation's one answering path
 * plus the annotator-answer probabilities (src/icl/trajectory-scorer.ts), with the workspace's response cache
 * when it is on — and turn them into the query's group with rewards. A failed VLM call removes that
 * trajectory (counted), never scores it 0. The sampling policy is the policy being updated, so the
 * importance ratio of the update is exactly 1 (one update per sample, as TRL with num_iterations = 1).
 *
 * Credit (`credit`): "trajectory" rewards the whole S-shot prompt and gives every pick its advantage.
 * "prefix" also asks the VLM with each trajectory's first 1..S−1 picks — the prompts the evaluation
 * builds at fewer shots, since greedy decoding is prefix-consistent — and credits the pick at step s
 * with the mean reward of the prefixes it is in (reward-to-go, src/train/objective/advantages.ts), so the first
 * pick is judged by the 1-shot answer it gives and not only by a 4-shot answer it barely changes.
 * Costs S times the VLM calls (shorter prompts, though); the online default (grpo-settings.ts
 * MODE_DEFAULTS), because it raised the one-shot gain on four of the five simulator worlds and left
 * the fifth equal (docs/training.md).
 */
import { z } from "zod";
import type { VqaItem } from "../../data/item.js";
import { SubsetSpecSchema } from "../../data/splits.js";
import type { PromptOrder } from "../../data/trajectories.js";
import type { AnswerDeps } from "../../icl/answer.js";
import { type RewardConfig, trajectoryReward } from "../../icl/rewards.js";
import { GT_ANSWER_SETS, scoreTrajectories } from "../../icl/trajectory-scorer.js";
import { sampleDecode } from "../../selector/decode.js";
import { type SelectorSources, selectorInput } from "../../selector/inputs.js";
import type { PointerSelector } from "../../selector/model.js";
import { noGrad } from "../../tensor/tensor.js";
import { LeverError } from "../../util/errors.js";
import type { Rng } from "../../util/rng.js";
import type { RlGroup } from "../data/rl-groups.js";
import { rewardToGo } from "./advantages.js";

export const CREDITS = ["trajectory", "prefix"] as const;
export type Credit = (typeof CREDITS)[number];

/** Credit when `credit` is unset, by mode (grpo-settings.ts MODE_DEFAULTS fills it when settings are resolved). */
export const CREDIT_DEFAULT = { offline: "trajectory", online: "prefix" } as const satisfies Record<string, Credit>;

export const OnlineSchema = z
  .object({
    enabled: z.boolean().default(false).meta({
      flag: "online",
      description:
        "on-policy GRPO: sample each batch's trajectories from the current policy and score them with the VLM",
    }),
    queries: SubsetSpecSchema.default("all").describe(
      "online: training queries among the pool set's queries (first:N, random:N or all)",
    ),
    samples: z.number().int().min(2).default(8).describe("online: trajectories sampled per query and step (G)"),
    temperature: z
      .number()
      .positive()
      .default(1)
      .describe("online: sampling temperature on the policy's step scores (1 = the policy itself)"),
    gtAnswers: z
      .enum(GT_ANSWER_SETS)
      .default("all")
      .describe("online: annotator answers whose probability is scored (all: needed by hybrid and gtprob rewards)"),
    correctThreshold: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe("online: vqaCorrect = 1 iff accuracy > 0 (0) or ≥ this threshold"),
    credit: z
      .enum(CREDITS)
      .optional()
      .describe(
        `online: trajectory (one reward per sampled prompt) or prefix (also score its 1..S−1-shot prefixes; each pick is credited with the mean reward of the prefixes it is in; S× the VLM calls, step ratios only); default ${CREDIT_DEFAULT.online} online, ${CREDIT_DEFAULT.offline} offline`,
      ),
    order: z
      .enum(["nearest", "farthest"])
      .default("nearest")
      .describe("online: prompt order (nearest: the first selected demonstration next to the query)"),
  })
  .strict();
export type OnlineConfig = z.infer<typeof OnlineSchema>;
/** The settings with the credit filled (grpo-settings.ts `resolveModeDefaults`): what a sampler runs on. */
export type ResolvedOnlineConfig = Required<OnlineConfig>;

export interface OnlineContext {
  sources: SelectorSources;
  shots: number;
  reward: RewardConfig;
  /** Items of the query dataset and of the index. */
  queryById: ReadonlyMap<string, VqaItem>;
  indexById: ReadonlyMap<string, VqaItem>;
  answer: AnswerDeps;
}

export interface OnlineStats {
  sampled: number;
  failed: number;
  /** Queries left with fewer than two scored samples (no group-relative signal). */
  droppedQueries: number;
  meanReward: number;
  meanAccuracy: number;
}

export class OnlineSampler {
  constructor(
    private readonly config: ResolvedOnlineConfig,
    private readonly ctx: OnlineContext,
  ) {}

  /** Samples and scores G trajectories per query; returns the groups with their rewards. */
  async sample(
    model: PointerSelector,
    groups: readonly RlGroup[],
    rng: Rng,
  ): Promise<{ groups: RlGroup[]; stats: OnlineStats }> {
    const ctx = this.ctx;
    const config = this.config;
    const drawn = noGrad(() => {
      const enc = model.encode(selectorInput(groups, ctx.sources, model.dtype));
      return sampleDecode(model, enc, ctx.shots, { samples: config.samples, temperature: config.temperature, rng });
    });
    // Prefix credit: every trajectory's prefixes of 1..S picks, prefix-major within a query.
    const lengths = config.credit === "prefix" ? Array.from({ length: ctx.shots }, (_, s) => s + 1) : [ctx.shots];
    const scored = await Promise.all(
      groups.map((g, b) => {
        const query = ctx.queryById.get(g.queryId);
        if (query === undefined) throw new LeverError(`query "${g.queryId}" is not in the query dataset`);
        return scoreTrajectories(
          query,
          lengths.flatMap((n) => drawn[b].map((t) => t.positions.slice(0, n).map((p) => g.poolIds[p]))),
          ctx.indexById,
          {
            gtAnswers: config.gtAnswers,
            correctThreshold: config.correctThreshold,
            order: config.order as PromptOrder,
          },
          ctx.answer,
        );
      }),
    );
    const stats: OnlineStats = { sampled: 0, failed: 0, droppedQueries: 0, meanReward: 0, meanAccuracy: 0 };
    const out: RlGroup[] = [];
    let rewardSum = 0;
    let accSum = 0;
    groups.forEach((g, b) => {
      const trajectories: Int32Array[] = [];
      const prefixRewards: number[][] = [];
      const G = drawn[b].length;
      for (let i = 0; i < G; i++) {
        stats.sampled++;
        const rewards: number[] = [];
        for (let n = 0; n < lengths.length; n++) {
          const s = scored[b][n * G + i];
          if (s.failure !== null || s.vqaAccScore === null) break;
          rewards.push(
            trajectoryReward(
              {
                selected: [],
                vqaAccScore: s.vqaAccScore,
                ...(s.vqaCorrect !== null ? { vqaCorrect: s.vqaCorrect } : {}),
                vqaGtProb: s.vqaGtProb,
                gtLogprob: s.gtLogprob,
              },
              ctx.reward,
              { queryId: g.queryId, index: i },
            ),
          );
        }
        // A trajectory with any failed prompt is left out whole (never scored 0).
        if (rewards.length < lengths.length) {
          stats.failed++;
          continue;
        }
        trajectories.push(Int32Array.from(drawn[b][i].positions));
        prefixRewards.push(rewards);
        const full = scored[b][(lengths.length - 1) * G + i];
        rewardSum += rewards[rewards.length - 1];
        accSum += full.vqaAccScore as number;
      }
      if (trajectories.length < 2) {
        stats.droppedQueries++;
        return;
      }
      const returns = config.credit === "prefix" ? rewardToGo(prefixRewards) : undefined;
      const rewards = returns ? returns.map((r) => r[0]) : prefixRewards.map((r) => r[0]);
      const best = rewards.reduce((k, r, i) => (r > rewards[k] ? i : k), 0);
      out.push({
        ...g,
        trajectories,
        rewards,
        ...(returns ? { returns } : {}),
        methods: trajectories.map(() => "sample"),
        weights: rewards.map(() => 1),
        best,
      });
    });
    const kept = stats.sampled - stats.failed;
    stats.meanReward = kept > 0 ? rewardSum / kept : Number.NaN;
    stats.meanAccuracy = kept > 0 ? accSum / kept : Number.NaN;
    return { groups: out, stats };
  }
}
