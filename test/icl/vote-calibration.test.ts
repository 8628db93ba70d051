import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddingCache } from "../../src/eval/setup.js";
import { calibrationText, voteCalibration } from "../../src/icl/vote-calibration.js";
import { VOTE_SCALES } from "../../src/metrics/answer-vote.js";
import { poolSampler } from "../../src/pools/samplers.js";
import { type SimWorkspace, simWorkspace } from "../eval/sim-workspace.js";

let sim: SimWorkspace;
beforeAll(() => {
  sim = simWorkspace();
});
afterAll(() => sim.ws.close());

describe("the vote's calibration on an index", () => {
  it("scores every scale on index items only, picks the best, and is the same however often it is asked", () => {
    const embeddings = new EmbeddingCache(sim.ws);
    const items = sim.ws.loadItems("train");
    const inputs = {
      dataset: "train",
      items,
      embedding: (kind: "image" | "text" | "joint") => embeddings.get("train", kind),
      kind: "joint" as const,
      pool: poolSampler("mix"),
      k: 16,
    };
    const c = voteCalibration(inputs);
    expect(c.accuracy.map((a) => a.scale)).toEqual([...VOTE_SCALES]);
    expect(c.queries).toBe(Math.min(1000, items.length));
    const best = Math.max(...c.accuracy.map((a) => a.accuracy));
    expect(c.accuracy.find((a) => a.scale === c.scale)?.accuracy).toBe(best);
    // On a world where similar items share answers, the nearest candidates say more than the pool's majority.
    expect(c.scale).toBeLessThan(64);
    expect(best).toBeGreaterThan(c.accuracy.at(-1)?.accuracy ?? 1);
    // Asked again by another stage of the process (through another embedding cache): computed once, kept.
    const again = voteCalibration({ ...inputs, embedding: (kind) => new EmbeddingCache(sim.ws).get("train", kind) });
    expect(again).toBe(c);
    expect(calibrationText(c)).toMatch(
      /^vote scale ρ = \d+(\.\d+)? \(calibrated on \d+ index items, first-pick accuracy % by ρ: 0\.5: /,
    );
  });

  it("refuses an index too small for its pools, naming K", () => {
    const embeddings = new EmbeddingCache(sim.ws);
    const items = sim.ws.loadItems("train").slice(0, 10);
    expect(() =>
      voteCalibration({
        dataset: "tiny",
        items,
        embedding: (k) => embeddings.get("train", k),
        kind: "joint",
        pool: { sampler: "joint-sim" },
        k: 16,
      }),
    ).toThrow(/too few to calibrate a vote over pools of 16/);
  });
});
