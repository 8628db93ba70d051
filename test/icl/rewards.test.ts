import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Trajectory } from "../../src/data/trajectories.js";
import {
  normalizeGroup,
  REWARD_MODES,
  type RewardConfig,
  RewardSchema,
  rankScores,
  scoredTrajectories,
  trajectoryReward,
} from "../../src/icl/rewards.js";
import { leverErrorOf } from "../helpers/errors.js";

/** A right answer (h 1, s 0.6) and a wrong one (h 0, s 0), with every other score present. */
const right: Trajectory = {
  selected: ["a", "b"],
  vqaCorrect: 1,
  vqaAccScore: 0.6,
  vqaGtProb: 0.3,
  vqaRelScore: 0.5,
  beamScore: 0.07,
  logprobScore: -9.1,
};
const wrong: Trajectory = {
  selected: ["c", "d"],
  vqaCorrect: 0,
  vqaAccScore: 0,
  vqaGtProb: 0.2,
  vqaRelScore: 0.4,
  beamScore: 0.02,
  logprobScore: -12,
};
const at = { queryId: "q7", index: 2 };

function reward(t: Trajectory, over: Partial<RewardConfig>): number {
  return trajectoryReward(t, RewardSchema.parse(over), at);
}

describe("reward modes", () => {
  it("are one table: the setting's choices and help name every mode, and docs/training.md documents each", () => {
    // Lever-Plus's reward modes, in the table's order.
    expect(RewardSchema.shape.mode.unwrap().options).toEqual([
      "hard_plus_soft",
      "hard_plus_soft_v2",
      "separated",
      "hard_only",
      "soft_only",
      "hard01_plus_gtprob",
      "hard01_plus_gtprob_separated",
      "hard_plus_gtprob_plus_rel",
      "legacy",
      "hybrid",
      "cider",
      "ref_logprob",
      "cider_plus_logprob",
    ]);
    const help = RewardSchema.shape.mode.description as string;
    const table = readFileSync(new URL("../../docs/training.md", import.meta.url), "utf8");
    for (const mode of REWARD_MODES) {
      expect(help).toMatch(new RegExp(`\\b${mode} = `));
      expect(table).toContain(`\`${mode}\``);
      // every mode computes a finite reward from a trajectory that has every field
      expect(Number.isFinite(reward({ ...right, gtLogprob: -3 }, { mode, alpha: 1, beta: 1 }))).toBe(true);
    }
  });

  it("has the documented defaults and rejects unknown keys", () => {
    expect(RewardSchema.parse({})).toEqual({
      mode: "hard_plus_soft",
      hardWeight: 1,
      softWeight: 1,
      relWeight: 0.1,
      gtWeight: 1,
      alpha: 0,
      beta: 0,
      correctness: "01",
      useLogprob: false,
      clip: 5,
      normalize: "zscore-clamp",
      normalizeClamp: 3,
    });
    expect(RewardSchema.safeParse({ hardWieght: 2 }).success).toBe(false);
  });

  it("hard_plus_soft = w_h·h + w_s·s", () => {
    expect(reward(right, {})).toBeCloseTo(1.6, 12);
    expect(reward(wrong, {})).toBe(0);
    expect(reward(right, { hardWeight: 2, softWeight: 0.5 })).toBeCloseTo(2.3, 12);
  });

  it("hard_plus_soft_v2 and separated = 2·w_h·h + w_s·s", () => {
    for (const mode of ["hard_plus_soft_v2", "separated"] as const) {
      expect(reward(right, { mode })).toBeCloseTo(2.6, 12);
      expect(reward(wrong, { mode })).toBe(0);
      expect(reward(right, { mode, hardWeight: 0.5, softWeight: 2 })).toBeCloseTo(2.2, 12);
    }
  });

  it("hard_only and soft_only", () => {
    expect(reward(right, { mode: "hard_only", hardWeight: 3 })).toBe(3);
    expect(reward(wrong, { mode: "hard_only" })).toBe(0);
    expect(reward(right, { mode: "soft_only", softWeight: 2 })).toBeCloseTo(1.2, 12);
  });

  it("hard01_plus_gtprob(_separated) use vqaGtProb as the soft term", () => {
    expect(reward(right, { mode: "hard01_plus_gtprob" })).toBeCloseTo(1.3, 12);
    expect(reward(wrong, { mode: "hard01_plus_gtprob" })).toBeCloseTo(0.2, 12);
    expect(reward(right, { mode: "hard01_plus_gtprob_separated" })).toBeCloseTo(2.3, 12);
    expect(reward(wrong, { mode: "hard01_plus_gtprob_separated" })).toBeCloseTo(0.2, 12);
  });

  it("hard_plus_gtprob_plus_rel adds relevance to wrong answers only", () => {
    expect(reward(right, { mode: "hard_plus_gtprob_plus_rel" })).toBeCloseTo(1 + 0.3, 12);
    expect(reward(wrong, { mode: "hard_plus_gtprob_plus_rel" })).toBeCloseTo(0.2 + 0.1 * 0.4, 12);
    expect(reward(wrong, { mode: "hard_plus_gtprob_plus_rel", relWeight: 0.5 })).toBeCloseTo(0.2 + 0.2, 12);
  });

  it("legacy = α·quality + β·corr in 01 and pm1 correctness", () => {
    const legacy = { mode: "legacy" as const, alpha: 0.5, beta: 2 };
    expect(reward(right, legacy)).toBeCloseTo(0.5 * 0.07 + 2, 12);
    expect(reward(wrong, legacy)).toBeCloseTo(0.5 * 0.02, 12);
    expect(reward(right, { ...legacy, correctness: "pm1" })).toBeCloseTo(0.035 + 2, 12);
    expect(reward(wrong, { ...legacy, correctness: "pm1" })).toBeCloseTo(0.01 - 2, 12);
    // quality = −logprobScore (0.5·12 = 6, clipped to 5 unless clipping is off)
    expect(reward(wrong, { ...legacy, useLogprob: true })).toBe(5);
    expect(reward(wrong, { ...legacy, useLogprob: true, clip: null })).toBeCloseTo(6, 12);
    // without vqaCorrect the accuracy stands in for it
    const noHard: Trajectory = { ...right, vqaCorrect: undefined };
    expect(reward(noHard, legacy)).toBeCloseTo(0.035 + 2 * 0.6, 12);
    expect(reward(noHard, { ...legacy, correctness: "pm1" })).toBeCloseTo(0.035 + 2 * (2 * 0.6 - 1), 12);
    // α = β = 0 (the defaults) is 0 whatever is stored
    expect(reward({ ...right, beamScore: null }, { mode: "legacy" })).toBe(0);
  });

  it("the caption modes read the CIDEr-D in vqaAccScore and the reference's log-probability", () => {
    const caption: Trajectory = { ...right, vqaAccScore: 2.5, gtLogprob: -7 };
    expect(reward(caption, { mode: "cider" })).toBeCloseTo(2.5, 12);
    expect(reward(caption, { mode: "cider", softWeight: 2 })).toBeCloseTo(5, 12);
    expect(reward(caption, { mode: "ref_logprob", clip: null })).toBeCloseTo(-7, 12);
    expect(reward(caption, { mode: "cider_plus_logprob", gtWeight: 0.1 })).toBeCloseTo(2.5 - 0.7, 12);
    expect(() => reward({ ...caption, gtLogprob: null }, { mode: "ref_logprob" })).toThrow(/needs gtLogprob/);
  });

  it("hybrid = w_s·s + gtWeight·g", () => {
    expect(reward(right, { mode: "hybrid" })).toBeCloseTo(0.9, 12);
    expect(reward(wrong, { mode: "hybrid" })).toBeCloseTo(0.2, 12);
    expect(reward(right, { mode: "hybrid", softWeight: 0.5, gtWeight: 2 })).toBeCloseTo(0.3 + 0.6, 12);
  });

  it("clips to [−clip, clip]", () => {
    expect(reward(right, { hardWeight: 10 })).toBe(5);
    expect(reward(right, { hardWeight: 10, clip: 8 })).toBe(8);
    expect(reward(right, { hardWeight: 10, clip: null })).toBeCloseTo(10.6, 12);
    expect(reward(wrong, { mode: "legacy", beta: 10, correctness: "pm1" })).toBe(-5);
    expect(reward(right, { mode: "legacy", alpha: 0.5, useLogprob: true })).toBeCloseTo(4.55, 12);
    expect(reward(right, { mode: "legacy", alpha: 1, useLogprob: true })).toBe(5);
  });
});

describe("missing reward fields", () => {
  it("names the mode, the query and the field instead of reading 0", () => {
    const noHard: Trajectory = { ...right, vqaCorrect: undefined };
    const e = leverErrorOf(() => trajectoryReward(noHard, RewardSchema.parse({}), { ...at, file: "r.json" }));
    expect(e.message).toContain('reward mode "hard_plus_soft" needs vqaCorrect');
    expect(e.location).toEqual({ file: "r.json", record: "q7", field: "trajectories[2].vqaCorrect" });
    expect(e.message).toBe(
      'r.json, record "q7", field "trajectories[2].vqaCorrect": reward mode "hard_plus_soft" needs vqaCorrect, which this trajectory lacks (choose a mode that does not use it, or set its weight to 0)',
    );
  });

  it("requires a field only when its term can change the reward", () => {
    const noHard: Trajectory = { ...right, vqaCorrect: undefined };
    expect(reward(noHard, { hardWeight: 0 })).toBeCloseTo(0.6, 12);
    const noRel: Trajectory = { ...right, vqaRelScore: null };
    // relevance is required even for a right answer (the error must not depend on the outcome)…
    expect(leverErrorOf(() => reward(noRel, { mode: "hard_plus_gtprob_plus_rel" })).location.field).toBe(
      "trajectories[2].vqaRelScore",
    );
    // …unless its weight is 0
    expect(reward(noRel, { mode: "hard_plus_gtprob_plus_rel", relWeight: 0 })).toBeCloseTo(1.3, 12);
  });

  it.each([
    ["hybrid", { mode: "hybrid" }, { vqaGtProb: null }, "vqaGtProb"],
    ["hard01_plus_gtprob", { mode: "hard01_plus_gtprob" }, { vqaGtProb: undefined }, "vqaGtProb"],
    ["hard_only", { mode: "hard_only" }, { vqaCorrect: undefined }, "vqaCorrect"],
    ["legacy", { mode: "legacy", alpha: 1 }, { beamScore: null }, "beamScore"],
    ["legacy", { mode: "legacy", alpha: 1, useLogprob: true }, { logprobScore: undefined }, "logprobScore"],
  ] as const)("%s without %s", (mode, over, missing, field) => {
    const e = leverErrorOf(() => reward({ ...right, ...missing }, over));
    expect(e.message).toContain(`reward mode "${mode}" needs ${field}`);
    expect(e.location.field).toBe(`trajectories[2].${field}`);
    expect(e.location.record).toBe("q7");
  });

  it("filters failed evaluations and counts them, keeping original indices", () => {
    const { kept, failed } = scoredTrajectories([right, { ...wrong, evalFailed: true }, wrong, right]);
    expect(failed).toBe(1);
    expect(kept.map((k) => k.index)).toEqual([0, 2, 3]);
    expect(kept[1].trajectory).toBe(wrong);
  });
});

describe("per-query normalisation", () => {
  const cfg = (normalize: RewardConfig["normalize"], normalizeClamp = 3) => ({ normalize, normalizeClamp });

  it("zscore uses the unbiased std", () => {
    expect(normalizeGroup([1, 2, 3], cfg("zscore"))).toEqual([-1, 0, 1]);
    const two = normalizeGroup([0, 2], cfg("zscore"));
    expect(two[0]).toBeCloseTo(-Math.SQRT1_2, 12);
    expect(two[1]).toBeCloseTo(Math.SQRT1_2, 12);
  });

  it("zscore-clamp clamps to ±normalizeClamp", () => {
    // ten 0s and one 10: mean 10/11, unbiased std 10/√11, z = −1/√11 and 10/√11 ≈ 3.015
    const xs = [...new Array(10).fill(0), 10];
    const z = normalizeGroup(xs, cfg("zscore"));
    expect(z[10]).toBeCloseTo(10 / Math.sqrt(11), 12);
    expect(z[0]).toBeCloseTo(-1 / Math.sqrt(11), 12);
    const c = normalizeGroup(xs, cfg("zscore-clamp"));
    expect(c[10]).toBe(3);
    expect(c[0]).toBeCloseTo(-1 / Math.sqrt(11), 12);
    expect(normalizeGroup(xs, cfg("zscore-clamp", 0.2))[0]).toBe(-0.2);
  });

  it("rank = 1 − 2·rank/(M − 1), rank 0 = best, ties share their average rank", () => {
    expect(normalizeGroup([3, 1, 2], cfg("rank"))).toEqual([1, -1, 0]);
    const tied = normalizeGroup([2, 1, 2, 0], cfg("rank"));
    [2 / 3, -1 / 3, 2 / 3, -1].forEach((v, i) => {
      expect(tied[i]).toBeCloseTo(v, 12);
    });
    expect(normalizeGroup([1, 3], cfg("rank"))).toEqual([-1, 1]);
    expect(rankScores([4, 4, 1, 1, 1])).toEqual([1 - (2 * 0.5) / 4, 1 - (2 * 0.5) / 4, -0.5, -0.5, -0.5]);
  });

  it("sends a group of one or of equal rewards to zeros (none passes rewards through)", () => {
    for (const method of ["zscore", "zscore-clamp", "rank"] as const) {
      expect(normalizeGroup([5], cfg(method))).toEqual([0]);
      expect(normalizeGroup([2, 2, 2], cfg(method))).toEqual([0, 0, 0]);
    }
    expect(normalizeGroup([5], cfg("none"))).toEqual([5]);
    expect(normalizeGroup([2, 2, 1], cfg("none"))).toEqual([2, 2, 1]);
  });
});
