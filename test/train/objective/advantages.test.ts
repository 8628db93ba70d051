import { describe, expect, it } from "vitest";
import {
  type AdvantageConfig,
  AdvantageSchema,
  groupAdvantages,
  rewardToGo,
  stepAdvantages,
} from "../../../src/train/objective/advantages.js";

const cfg = (over: Partial<AdvantageConfig>) => AdvantageSchema.parse(over);

function close(got: number[][], want: number[][]) {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => {
    expect(g.length).toBe(want[i].length);
    g.forEach((v, j) => {
      expect(v).toBeCloseTo(want[i][j], 12);
    });
  });
}

describe("group advantages", () => {
  it("has the documented defaults", () => {
    expect(AdvantageSchema.parse({})).toEqual({ kind: "zscore", stdFloor: 1e-3, clip: 5 });
    expect(AdvantageSchema.safeParse({ kind: "zscore", floor: 1 }).success).toBe(false);
  });

  it("zscore: (R − mean)/max(std, stdFloor) with the unbiased std", () => {
    close(groupAdvantages([[1, 2, 3]], cfg({})).advantages, [[-1, 0, 1]]);
    close(groupAdvantages([[1, 2, 3]], cfg({ stdFloor: 2 })).advantages, [[-0.5, 0, 0.5]]);
    // std of [0, 1e-4] is 7.07e-5 < the default floor 1e-3: A = ±5e-5 / 1e-3
    close(groupAdvantages([[0, 1e-4]], cfg({})).advantages, [[-0.05, 0.05]]);
  });

  it("rank: 1 − 2·rank/(M − 1) with ties averaged", () => {
    close(groupAdvantages([[3, 1, 2]], cfg({ kind: "rank" })).advantages, [[1, -1, 0]]);
    close(groupAdvantages([[2, 1, 2, 0]], cfg({ kind: "rank" })).advantages, [[2 / 3, -1 / 3, 2 / 3, -1]]);
  });

  it("mean: R − mean without std scaling (Dr. GRPO); none: A = R", () => {
    close(groupAdvantages([[1, 2, 6]], cfg({ kind: "mean" })).advantages, [[-2, -1, 3]]);
    close(groupAdvantages([[1, 2, 6]], cfg({ kind: "none" })).advantages, [[1, 2, 5]]); // clipped at 5
    close(groupAdvantages([[1, 2, 6]], cfg({ kind: "none", clip: null })).advantages, [[1, 2, 6]]);
  });

  it("gives zero-variance groups (size 1, all equal) exactly 0 and counts them", () => {
    const rewards = [[2, 2, 2], [5], [1, 3]];
    for (const kind of ["zscore", "rank", "mean"] as const) {
      const { advantages, stats } = groupAdvantages(rewards, cfg({ kind }));
      expect(advantages[0]).toEqual([0, 0, 0]);
      expect(advantages[1]).toEqual([0]);
      expect(stats.zeroVarianceGroups).toBe(2);
      expect(stats.groups).toBe(3);
      expect(stats.trajectories).toBe(6);
    }
    const none = groupAdvantages(rewards, cfg({ kind: "none" }));
    expect(none.advantages).toEqual(rewards);
    expect(none.stats.zeroVarianceGroups).toBe(2);
    close(groupAdvantages(rewards, cfg({})).advantages.slice(2), [[-Math.SQRT1_2, Math.SQRT1_2]]);
  });

  it("clips |A| to clip (null = off)", () => {
    const outlier = [...new Array(10).fill(0), 10]; // z of the 10 is 10/√11 ≈ 3.015
    expect(groupAdvantages([outlier], cfg({ clip: 3 })).advantages[0][10]).toBe(3);
    expect(groupAdvantages([outlier], cfg({ clip: null })).advantages[0][10]).toBeCloseTo(10 / Math.sqrt(11), 12);
    expect(groupAdvantages([[0, 20]], cfg({ kind: "mean" })).advantages).toEqual([[-5, 5]]);
    expect(groupAdvantages([[0, 20]], cfg({ kind: "none", clip: 4 })).advantages).toEqual([[0, 4]]);
  });

  it("reports mean, population std, max |A| and the share of low-std groups", () => {
    const { stats } = groupAdvantages(
      [
        [1, 2, 3],
        [4, 4],
      ],
      cfg({}),
    );
    // A = [−1, 0, 1, 0, 0]
    expect(stats.mean).toBeCloseTo(0, 12);
    expect(stats.std).toBeCloseTo(Math.sqrt(2 / 5), 12);
    expect(stats.maxAbs).toBe(1);
    expect(stats.lowStdShare).toBe(0.5);
    // mean-centred [1, 1.01] → ±0.005, std 0.0071 < 0.05: low; [0, 1] → ±0.5: not low
    const mean = groupAdvantages([[1, 1.01], [0, 1], [3, 3, 3], [7]], cfg({ kind: "mean" })).stats;
    expect(mean.lowStdShare).toBe(3 / 4);
    expect(mean.zeroVarianceGroups).toBe(2);
    expect(mean.maxAbs).toBeCloseTo(0.5, 12);
  });
});

describe("prefix credit", () => {
  it("rewardToGo: mean of the rewards of the prefixes each step is in", () => {
    expect(
      rewardToGo([
        [0, 1, 1, 0.5],
        [1, 0, 0, 0],
      ]),
    ).toEqual([
      [2.5 / 4, 2.5 / 3, 1.5 / 2, 0.5],
      [0.25, 0, 0, 0],
    ]);
    expect(rewardToGo([[0.3]])).toEqual([[0.3]]);
  });

  it("stepAdvantages compares each step's returns within the group, as groupAdvantages does", () => {
    const zscore = AdvantageSchema.parse({});
    const returns = [
      [
        [0.5, 1, 1],
        [0.5, 0, 0],
        [0.2, 0, 1],
      ],
      [
        [1, 1, 1],
        [1, 1, 1],
      ],
    ];
    const { advantages, stats } = stepAdvantages(returns, zscore);
    for (let s = 0; s < 3; s++) {
      const want = groupAdvantages(
        returns.map((g) => g.map((row) => row[s])),
        zscore,
      ).advantages;
      for (const [b, g] of want.entries()) for (const [i, v] of g.entries()) expect(advantages[b][i][s]).toBe(v);
    }
    // step 0 of group 0: mean 0.4, unbiased std √0.03 → (0.1, 0.1, −0.2)/0.1732
    expect(advantages[0][2][0]).toBeCloseTo(-0.2 / Math.sqrt(0.03), 12);
    // (group, step) units: 6, of which group 1's three steps have no comparison.
    expect(stats).toMatchObject({ groups: 6, trajectories: 5, zeroVarianceGroups: 3 });
    expect(advantages[1].flat()).toEqual([0, 0, 0, 0, 0, 0]);
  });
});
