import { describe, expect, it } from "vitest";
import { belowStartWarnings, healthWarnings, sftHealthWarnings } from "../../../src/train/objective/health.js";

/** An epoch that trains as it should: no warning. */
const HEALTHY = {
  lowAdvStdShare: 0.1,
  klShare: 0.2,
  clipLow: 0.02,
  clipHigh: 0.01,
  selectionChange: 0.3,
  kl: 0.05,
};

const codes = (m: Record<string, number>, onPolicy = false) => healthWarnings(2, m, { onPolicy }).map((w) => w.code);

describe("RL health warnings", () => {
  it("a healthy epoch raises none", () => {
    expect(codes(HEALTHY)).toEqual([]);
  });

  it("each check fires just past its threshold and names the epoch", () => {
    expect(codes({ ...HEALTHY, lowAdvStdShare: 0.51 })).toEqual(["low-advantage-std"]);
    expect(codes({ ...HEALTHY, lowAdvStdShare: 0.5 })).toEqual([]);
    expect(codes({ ...HEALTHY, klShare: 0.51 })).toEqual(["kl-dominates"]);
    expect(codes({ ...HEALTHY, clipLow: 0.0004, clipHigh: 0.0004 })).toEqual(["clip-never"]);
    expect(codes({ ...HEALTHY, clipLow: 0.5, clipHigh: 0.41 })).toEqual(["clip-always"]);
    expect(codes({ ...HEALTHY, selectionChange: 0 })).toEqual(["no-selection-change"]);
    expect(codes({ ...HEALTHY, kl: 10.5 })).toEqual(["kl-explodes"]);
    expect(healthWarnings(2, { ...HEALTHY, kl: 12 })[0]).toMatchObject({ epoch: 2, code: "kl-explodes" });
  });

  it("on-policy training (ratio 1 by construction) gets no clipping warnings, the others still apply", () => {
    expect(codes({ ...HEALTHY, clipLow: 0, clipHigh: 0 })).toEqual(["clip-never"]);
    expect(codes({ ...HEALTHY, clipLow: 0, clipHigh: 0 }, true)).toEqual([]);
    expect(codes({ ...HEALTHY, clipLow: 0.95, clipHigh: 0 }, true)).toEqual([]);
    expect(codes({ ...HEALTHY, clipLow: 0, clipHigh: 0, klShare: 0.9 }, true)).toEqual(["kl-dominates"]);
  });

  it("metrics a stage does not log raise nothing (RCE logs no clip fractions)", () => {
    expect(codes({ selectionChange: 0.2 })).toEqual([]);
  });
});

describe("RL below its starting checkpoint", () => {
  const gain = (...g: number[]) => g.map((valAccuracyGain) => ({ valAccuracyGain }));
  it("warns when every epoch so far validates below the start, from the second epoch (or the first when it is the last)", () => {
    expect(belowStartWarnings(0, gain(-0.02), 4)).toEqual([]);
    const [w] = belowStartWarnings(1, gain(-0.02, -0.011), 4);
    expect(w).toMatchObject({ epoch: 1, code: "below-start" });
    expect(w.message).toMatch(
      /^every epoch so far validates below the starting checkpoint \(valAccuracyGain -2\.0, -1\.1 points; best -1\.1\): this run makes the selector worse/,
    );
    expect(belowStartWarnings(0, gain(-0.02), 1).map((x) => x.code)).toEqual(["below-start"]);
  });
  it("says nothing once an epoch reached the start, or without VLM validation answers", () => {
    expect(belowStartWarnings(2, gain(-0.02, 0, -0.03), 4)).toEqual([]);
    expect(belowStartWarnings(2, gain(-0.02, 0.01, -0.03), 4)).toEqual([]);
    expect(belowStartWarnings(2, [{ valRce: 1 }, { valRce: 1 }, { valRce: 1 }], 4)).toEqual([]);
    expect(belowStartWarnings(1, gain(Number.NaN, -0.1), 4)).toEqual([]);
  });
});

describe("SFT health", () => {
  const flat = { valLoss: 3.167, valTop1: 0.15, valSeqAgree: 0 };
  it("warns from the third epoch when validation has not improved on epoch 1", () => {
    expect(sftHealthWarnings(1, [flat, flat])).toEqual([]);
    const [w] = sftHealthWarnings(2, [flat, { ...flat, valLoss: 3.16 }, flat]);
    expect(w).toMatchObject({ epoch: 2, code: "sft-no-progress" });
    expect(w.message).toMatch(
      /^3 epochs and validation has not improved on epoch 1 \(valLoss 3\.1670 → 3\.1670, valTop1 0\.1500 → 0\.1500, valSeqAgree 0\.0000 → 0\.0000\)/,
    );
  });
  it("says nothing once any validation metric improved, or without validation", () => {
    expect(sftHealthWarnings(2, [flat, flat, { ...flat, valSeqAgree: 0.025 }])).toEqual([]);
    expect(sftHealthWarnings(2, [flat, { ...flat, valTop1: 0.2 }, flat])).toEqual([]);
    expect(sftHealthWarnings(2, [flat, flat, { ...flat, valLoss: 3.1 }])).toEqual([]);
    expect(sftHealthWarnings(2, [{ trainLoss: 1 }, { trainLoss: 1 }, { trainLoss: 1 }])).toEqual([]);
  });
});
