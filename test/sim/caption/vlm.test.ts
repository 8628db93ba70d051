import { describe, expect, it } from "vitest";
import { pairUniform } from "../../../src/sim/caption/model.js";
import type { CaptionWorldParamsInput } from "../../../src/sim/caption/params.js";
import { SimCaptionVlm } from "../../../src/sim/caption/vlm.js";
import { isFailure, type VlmPrompt } from "../../../src/vlm/types.js";

const PARAMS: CaptionWorldParamsInput = { seed: 11, trainItems: 400, valItems: 60 };
const sim = SimCaptionVlm.fromParams(PARAMS);
const world = sim.world;
const train = world.itemsOf("train");
const val = world.itemsOf("val");

const prompt = (q: number, demos: number[], reference = 0): VlmPrompt => ({
  query: { questionId: world.itemIds[q], imagePath: null, question: "" },
  demonstrations: demos.map((d) => ({
    questionId: world.itemIds[d],
    imagePath: null,
    question: "",
    answer: world.references[d][reference],
  })),
});
const words = (text: string) => text.trim().split(/\s+/).length;

describe("SimCaptionVlm", () => {
  it("generates deterministically, whatever was asked before", async () => {
    const prompts = val.slice(0, 20).map((q, k) => prompt(q, train.slice(k, k + (k % 4))));
    const first = await sim.generate(prompts);
    await sim.generate(prompts.slice().reverse());
    const again = await SimCaptionVlm.fromParams(PARAMS).generate(prompts);
    expect(again).toEqual(first);
    for (const out of first) expect(isFailure(out)).toBe(false);
  });

  it("is chatty zero-shot and shorter with demonstrations", () => {
    const zero = val.map((q) => sim.caption(prompt(q, [])));
    const shot = val.map((q, k) => sim.caption(prompt(q, train.slice(3 * k, 3 * k + 3))));
    const mean = (xs: string[]) => xs.reduce((a, x) => a + words(x), 0) / xs.length;
    expect(zero.filter((t) => t.startsWith("the image shows")).length).toBeGreaterThan(val.length / 2);
    expect(shot.filter((t) => t.startsWith("the image shows")).length).toBeLessThan(val.length / 4);
    expect(mean(zero)).toBeGreaterThan(mean(shot) + 3);
  });

  it("scores the greedy caption above a perturbed one, by hand", async () => {
    const q = val[0];
    const p = prompt(q, train.slice(0, 2));
    const greedy = sim.caption(p);
    const [scored] = await sim.scoreAnswer([{ prompt: p, answer: greedy }]);
    if (isFailure(scored)) throw new Error(scored.message);
    expect(scored.tokens).toBe(words(greedy));
    expect(scored.logprobMean).toBeCloseTo(scored.logprobSum / scored.tokens, 12);
    const list = greedy.split(" ");
    const swapped = [...list.slice(0, 1), list[2], list[1], ...list.slice(3)].join(" ");
    const dropped = list.slice(0, -1).join(" ");
    const extended = `${greedy} with a dog`;
    for (const other of [swapped, dropped, extended, "a cat on the beach"])
      expect(sim.logProb(p, other), other).toBeLessThan(sim.logProb(p, greedy));
    // Punctuation and capitals do not change the words.
    expect(sim.logProb(p, `${greedy[0].toUpperCase()}${greedy.slice(1)}.`)).toBeCloseTo(sim.logProb(p, greedy), 12);
    const [empty] = await sim.scoreAnswer([{ prompt: p, answer: "  " }]);
    expect(isFailure(empty) && empty.reason).toBe("invalid-request");
  });

  it("gives a reference a higher log-probability after demonstrations in its own style", () => {
    let better = 0;
    for (const q of val) {
      const reference = world.references[q][0];
      if (sim.logProb(prompt(q, train.slice(0, 2)), reference) > sim.logProb(prompt(q, []), reference)) better++;
    }
    expect(better).toBeGreaterThan(val.length * 0.75);
  });

  it("copies a near-duplicate demonstration's caption verbatim, for the hashed share of pairs", () => {
    const p = world.params.model;
    const near: [number, number][] = [];
    for (const q of val)
      for (const d of train)
        if (
          world.scene[d] === world.scene[q] &&
          world.objects[0][d] === world.objects[0][q] &&
          world.objects[1][d] === world.objects[1][q] &&
          sim.model.cosine(q, d) >= p.copyThreshold
        )
          near.push([q, d]);
    const copied = near.filter(([q, d]) => pairUniform(q, d) < p.copyProbability);
    expect(copied.length).toBeGreaterThan(0);
    expect(near.length).toBeGreaterThan(copied.length);
    for (const [q, d] of copied) {
      const caption = world.references[d][0].trim();
      expect(sim.caption(prompt(q, [d]))).toBe(caption);
      expect(sim.logProb(prompt(q, [d]), caption)).toBeGreaterThan(Math.log(p.copyMass));
    }
    for (const [q, d] of near.filter(([a, b]) => pairUniform(a, b) >= p.copyProbability))
      expect(sim.caption(prompt(q, [d]))).not.toBe(world.references[d][0].trim());
    // Without copying, the same pairs are not copied.
    const noCopy = SimCaptionVlm.fromParams({ ...PARAMS, model: { copyProbability: 0 } });
    for (const [q, d] of copied) expect(noCopy.caption(prompt(q, [d]))).not.toBe(world.references[d][0].trim());
  });

  it("names its world and parameters in its id, and refuses ids of another world", () => {
    expect(sim.id).toContain(world.fingerprint.slice(0, 16));
    const other = SimCaptionVlm.fromParams({ ...PARAMS, model: { copyMass: 0.5 } });
    expect(other.id).not.toBe(sim.id);
    expect(() =>
      sim.caption({ query: { questionId: "999999999", imagePath: null, question: "" }, demonstrations: [] }),
    ).toThrow(/not in this simulator's caption world/);
  });
});
