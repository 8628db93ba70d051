import { describe, expect, it } from "vitest";
import { EarlyStopping } from "../../../src/train/loop/early-stopping.js";
import { lrMultiplier, ScheduleSchema } from "../../../src/train/loop/schedule.js";
import { splitByQuery } from "../../../src/train/loop/split.js";
import { Rng } from "../../../src/util/rng.js";

describe("learning-rate schedule", () => {
  it("warms up linearly then follows a half cosine to the floor", () => {
    const s = ScheduleSchema.parse({ kind: "cosine", warmupRatio: 0.1, minLrRatio: 0.1 });
    // 100 steps: warm-up steps 0..9 give 0.1..1.0
    expect(lrMultiplier(s, 0, 100)).toBeCloseTo(0.1, 12);
    expect(lrMultiplier(s, 9, 100)).toBeCloseTo(1, 12);
    expect(lrMultiplier(s, 10, 100)).toBeCloseTo(1, 12);
    // halfway through the decay (step 10 + 45): 0.1 + 0.9 * 0.5
    expect(lrMultiplier(s, 55, 100)).toBeCloseTo(0.55, 12);
    expect(lrMultiplier(s, 100, 100)).toBeCloseTo(0.1, 12);
  });

  it("stays flat after warm-up when constant", () => {
    const s = ScheduleSchema.parse({ kind: "constant", warmupRatio: 0 });
    expect([0, 5, 99].map((k) => lrMultiplier(s, k, 100))).toEqual([1, 1, 1]);
  });
});

describe("early stopping", () => {
  it("tracks the best epoch and stops after `patience` epochs without improvement", () => {
    const e = new EarlyStopping("max", 2);
    expect(e.update(0.5, 0)).toEqual({ improved: true, stop: false });
    expect(e.update(0.7, 1)).toEqual({ improved: true, stop: false });
    expect(e.update(0.6, 2)).toEqual({ improved: false, stop: false });
    expect(e.update(0.7, 3)).toEqual({ improved: false, stop: true });
    expect(e.bestEpoch).toBe(1);
    expect(e.best).toBe(0.7);
  });

  it("never counts NaN as an improvement", () => {
    const e = new EarlyStopping("min", 0);
    e.update(1, 0);
    expect(e.update(Number.NaN, 1).improved).toBe(false);
  });
});

describe("split by query", () => {
  it("is seeded, disjoint, complete and independent of input order", () => {
    const ids = Array.from({ length: 50 }, (_, i) => String(1000 + i));
    const a = splitByQuery(ids, 0.2, new Rng(3));
    const b = splitByQuery([...ids].reverse(), 0.2, new Rng(3));
    expect(a).toEqual(b);
    expect(a.val).toHaveLength(10);
    expect(new Set([...a.train, ...a.val]).size).toBe(50);
    expect(a.train.some((id) => a.val.includes(id))).toBe(false);
    expect(splitByQuery(ids, 0.2, new Rng(4)).val).not.toEqual(a.val);
  });

  it("by image: no image on both sides, at least the requested share held out, seeded and order-free", () => {
    // 60 questions on 20 images of 1-5 questions each (VQAv2-style ids: image·1000 + k).
    const sizes = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5];
    const imageOf = new Map<string, string>();
    sizes.forEach((n, img) => {
      for (let k = 0; k < n; k++) imageOf.set(String((img + 1) * 1000 + k), String(img + 1));
    });
    const ids = [...imageOf.keys()];
    const a = splitByQuery(ids, 0.2, new Rng(3), imageOf);
    expect(splitByQuery([...ids].reverse(), 0.2, new Rng(3), imageOf)).toEqual(a);
    expect(new Set([...a.train, ...a.val]).size).toBe(ids.length);
    const trainImages = new Set(a.train.map((id) => imageOf.get(id)));
    expect(a.val.some((id) => trainImages.has(imageOf.get(id)))).toBe(false);
    const target = Math.round(0.2 * ids.length);
    expect(a.val.length).toBeGreaterThanOrEqual(target);
    expect(a.val.length).toBeLessThan(target + 5); // stops at the image that reaches the target
    expect(splitByQuery(ids, 0.2, new Rng(4), imageOf).val).not.toEqual(a.val);
    // A query whose image is unknown is its own group; one image never goes wholly to validation.
    expect(
      splitByQuery(
        ["1000", "1001"],
        0.5,
        new Rng(1),
        new Map([
          ["1000", "1"],
          ["1001", "1"],
        ]),
      ).val,
    ).toEqual([]);
    expect(splitByQuery(["1000", "2000"], 0.5, new Rng(1), new Map()).val).toHaveLength(1);
  });
});
