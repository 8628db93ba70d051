import { describe, expect, it } from "vitest";
import { postprocessVqaAnswer } from "../../src/metrics/postprocess.js";
import { vqaAccuracy } from "../../src/metrics/vqa.js";
import { Rng } from "../../src/util/rng.js";
import type { GenerateResult } from "../../src/vlm/types.js";
import { noisy, oracle, plain, randomPool, trainIds, valIds } from "./small-world.js";

/** Every ordered choice of `shots` distinct elements. */
function* orderedChoices(n: number, shots: number, prefix: number[] = []): Generator<number[]> {
  if (prefix.length === shots) {
    yield prefix.slice();
    return;
  }
  for (let i = 0; i < n; i++) if (!prefix.includes(i)) yield* orderedChoices(n, shots, [...prefix, i]);
}

describe.each([
  ["the plain world", plain],
  ["a world with label noise and item quality", noisy],
])("SimOracle on %s", (_name, { sim, world, oracle, valIds, randomPool }) => {
  it("expectedAccuracy = official VQA accuracy of the post-processed text `generate` returns", async () => {
    const rng = new Rng(1);
    for (let t = 0; t < 200; t++) {
      const q = valIds[rng.int(valIds.length)];
      const demos = randomPool(rng, rng.int(5));
      const prompt = {
        query: { questionId: q, imagePath: null, question: "" },
        demonstrations: demos.map((d) => ({
          questionId: d,
          imagePath: null,
          question: "",
          answer: world.shownAnswer[world.indexOf(d)],
        })),
      };
      const [generated] = (await sim.generate([prompt])) as GenerateResult[];
      const gts = world.annotatorAnswers[world.indexOf(q)];
      expect(oracle.expectedAccuracy(q, demos)).toBe(vqaAccuracy(postprocessVqaAnswer(generated.text), gts));
    }
  });

  it("bestTrajectory equals exhaustive search over every ordered choice (small pools, 1-3 shots)", () => {
    const rng = new Rng(2);
    let improvedOverFirst = 0;
    for (let t = 0; t < 40; t++) {
      const q = valIds[rng.int(valIds.length)];
      const pool = randomPool(rng, 7);
      for (const shots of [1, 2, 3]) {
        let bruteBest = -1;
        for (const choice of orderedChoices(pool.length, shots))
          bruteBest = Math.max(
            bruteBest,
            oracle.expectedAccuracy(
              q,
              choice.map((i) => pool[i]),
            ),
          );
        const best = oracle.bestTrajectory(q, pool, shots);
        expect(best.accuracy).toBe(bruteBest);
        expect(best.positions).toHaveLength(shots);
        expect(new Set(best.positions).size).toBe(shots);
        expect(best.demoIds).toEqual(best.positions.map((i) => pool[i]));
        expect(oracle.expectedAccuracy(q, best.demoIds)).toBe(best.accuracy);
        expect(oracle.greedyAnswer(q, best.demoIds)).toBe(best.answer);
        if (best.accuracy > oracle.expectedAccuracy(q, pool.slice(0, shots))) improvedOverFirst++;
      }
    }
    expect(improvedOverFirst).toBeGreaterThan(10);
  });
});

describe("SimOracle", () => {
  it("finds that order matters: some queries' best trajectory loses accuracy when reversed", () => {
    const rng = new Rng(3);
    let orderSensitive = 0;
    for (let t = 0; t < 150; t++) {
      const q = valIds[rng.int(valIds.length)];
      const best = oracle.bestTrajectory(q, randomPool(rng, 16), 3);
      if (oracle.expectedAccuracy(q, [...best.demoIds].reverse()) < best.accuracy) orderSensitive++;
    }
    expect(orderSensitive).toBeGreaterThan(0);
  });

  it("handles 0 shots as zero-shot and rejects impossible requests with the field named", () => {
    const q = valIds[0];
    const pool = trainIds.slice(0, 5);
    const zero = oracle.bestTrajectory(q, pool, 0);
    expect(zero.positions).toEqual([]);
    expect(zero.accuracy).toBe(oracle.expectedAccuracy(q, []));
    expect(() => oracle.bestTrajectory(q, pool, 6)).toThrow(/shots/);
    expect(() => oracle.bestTrajectory(q, [pool[0], pool[0]], 1)).toThrow(/duplicate/);
    expect(() => oracle.bestTrajectory("nope", pool, 1)).toThrow(/nope/);
  });

  it("searches K=32 pools at 4 shots quickly (branch and bound, not 863k orderings)", () => {
    const rng = new Rng(4);
    let nodes = 0;
    for (let t = 0; t < 30; t++)
      nodes += oracle.bestTrajectory(valIds[rng.int(valIds.length)], randomPool(rng, 32), 4).nodes;
    expect(nodes / 30).toBeLessThan(50_000);
  });
});

describe("SimOracle with label noise", () => {
  it("scores against the query's annotations: a noisy query's latent true answer loses to the wrong answer it shows", () => {
    const { world, oracle, valIds } = noisy;
    const noisyIds = valIds.filter((id) => world.wrongAnswer[world.indexOf(id)] >= 0);
    expect(noisyIds.length).toBeGreaterThan(30);
    let truthLoses = 0;
    for (const id of noisyIds) {
      const q = world.indexOf(id);
      const wrong = world.registry.canonical[world.wrongAnswer[q]];
      const truth = world.registry.canonical[world.trueAnswer[q]];
      const score = oracle.scorer(q);
      expect(score(wrong)).toBeGreaterThanOrEqual(score(truth));
      if (score(truth) < score(wrong)) truthLoses++;
    }
    expect(truthLoses / noisyIds.length).toBeGreaterThan(0.9);
  });
});
