/**
 * What the beam search buys, measured on the default synthetic world (4,000 train items) with the
 * simulator's oracle: the mean oracle accuracy (the simulator's greedy answer scored with the
 * official metric) of the best beam per anchor against random trajectories and similarity top-k
 * from the same pools; the Spearman correlation of the beams' cumulative InfoScore with that
 * accuracy; and what the candidate budget saves. 200 anchors, K = 32, beam 5, 4 shots.
 */
import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { type PromptOrder, toPromptOrder } from "../../src/data/trajectories.js";
import { type AnchorResult, searchAnchor } from "../../src/datagen/beams.js";
import { Similarity } from "../../src/datagen/inputs.js";
import { mean, spearman } from "../../src/metrics/stats.js";
import { PoolBuilder, poolSampler } from "../../src/pools/samplers.js";
import { splitEmbeddings } from "../../src/sim/embed.js";
import { SimOracle } from "../../src/sim/oracle.js";
import { SimVlm } from "../../src/sim/vlm.js";
import { World } from "../../src/sim/world.js";
import { Rng } from "../../src/util/rng.js";

const ANCHORS = 200;
const K = 32;
const SHOTS = 4;
const BEAM = 5;
const ORDER: PromptOrder = "nearest";

function trainItems(world: World): VqaItem[] {
  return world.itemsOf("train").map((i) => ({
    questionId: world.questionIds[i],
    imageId: String(world.imageOf[i]),
    question: world.questions[i],
    answers: world.annotatorAnswers[i].map((answer) => ({ answer })),
    answer: world.shownAnswer[i],
    questionType: "synthetic",
    answerType: "other",
    imagePath: null,
  }));
}

describe("InfoScore beams on the default synthetic world", () => {
  it("beat random and top-k trajectories from the same pools, and their score tracks the oracle's accuracy", async () => {
    const world = World.generate({});
    const sim = new SimVlm(world);
    const oracle = new SimOracle(sim);
    const items = trainItems(world);
    const emb = splitEmbeddings(world, "train");
    const matrix = (kind: "joint" | "image" | "text") => ({ ids: emb.ids, dim: emb.dim, data: emb[kind] });
    const anchors = new Rng(1)
      .child("anchors")
      .sampleWithoutReplacement(items.length, ANCHORS)
      .sort((a, b) => a - b)
      .map((i) => items[i]);
    const builder = new PoolBuilder({
      index: items,
      indexEmbeddings: { joint: matrix("joint"), image: matrix("image"), text: matrix("text") },
      indexName: "train",
    });
    const pools = builder.build(anchors, {
      ...poolSampler("mix"),
      k: K,
      seed: 1,
      queryEmbeddings: { image: matrix("image"), text: matrix("text"), joint: matrix("joint") },
    });
    const byId = new Map(items.map((item) => [item.questionId, item]));
    const similarity = new Similarity(matrix("joint"), matrix("joint"));
    const score = (requests: Parameters<SimVlm["scoreAnswer"]>[0]) => sim.scoreAnswer(requests);
    const accuracy = (query: VqaItem, selected: readonly string[]) =>
      oracle.expectedAccuracy(query.questionId, toPromptOrder(selected, ORDER));

    const started = performance.now();
    const best: number[] = [];
    const bestBudget8: number[] = [];
    const random: number[] = [];
    const topk: number[] = [];
    const scores: number[] = [];
    const beamAccuracies: number[] = [];
    const withinAnchor: number[] = [];
    const calls = { exhaustive: 0, budget8: 0 };
    const rng = new Rng(2).child("random-trajectories");
    for (const [a, query] of anchors.entries()) {
      const pool = pools[a].map((id) => byId.get(id)!);
      const prior = similarity.toCandidates(query.questionId, pools[a]);
      const found: AnchorResult = await searchAnchor(
        { query, pool },
        { beamSize: BEAM, shots: SHOTS, order: ORDER, budget: null },
        score,
      );
      if (!found.ok) throw new Error(found.error);
      calls.exhaustive += found.requests;
      const accs = found.beams.map((b) => accuracy(query, b.selected));
      best.push(accs[0]);
      found.beams.forEach((b, i) => {
        scores.push(b.score);
        beamAccuracies.push(accs[i]);
      });
      const rho = spearman(
        found.beams.map((b) => b.score),
        accs,
      );
      if (Number.isFinite(rho)) withinAnchor.push(rho);
      for (let r = 0; r < 5; r++)
        random.push(
          accuracy(
            query,
            rng.sampleWithoutReplacement(K, SHOTS).map((p) => pool[p].questionId),
          ),
        );
      const ranked = Array.from({ length: K }, (_, p) => p).sort((x, y) => prior[y] - prior[x] || x - y);
      topk.push(
        accuracy(
          query,
          ranked.slice(0, SHOTS).map((p) => pool[p].questionId),
        ),
      );
      const cut = await searchAnchor(
        { query, pool, prior },
        { beamSize: BEAM, shots: SHOTS, order: ORDER, budget: 8 },
        score,
      );
      if (!cut.ok) throw new Error(cut.error);
      calls.budget8 += cut.requests;
      bestBudget8.push(accuracy(query, cut.beams[0].selected));
    }
    const seconds = (performance.now() - started) / 1000;
    const report = {
      bestBeam: mean(best),
      bestBeamBudget8: mean(bestBudget8),
      random: mean(random),
      topk: mean(topk),
      spearmanPooled: spearman(scores, beamAccuracies),
      // Within one anchor the five beams mostly share one accuracy, so ρ is defined for few anchors.
      spearmanWithinAnchor: {
        anchors: withinAnchor.length,
        mean: withinAnchor.length > 0 ? mean(withinAnchor) : Number.NaN,
      },
      callsPerAnchor: { exhaustive: calls.exhaustive / ANCHORS, budget8: calls.budget8 / ANCHORS },
      seconds,
    };
    console.log(JSON.stringify(report, null, 2));

    // Requests per anchor: the empty prompt + K at step 1 + beam × (K − t) at later steps (M = K);
    // 1 + 8 + beam × 8 × (shots − 1) with M = 8.
    expect(report.callsPerAnchor.exhaustive).toBe(1 + K + BEAM * (K - 1 + (K - 2) + (K - 3)));
    expect(report.callsPerAnchor.budget8).toBe(1 + 8 + BEAM * 8 * (SHOTS - 1));
    expect(report.bestBeam).toBeGreaterThan(report.random + 0.1);
    expect(report.bestBeam).toBeGreaterThan(report.topk + 0.05);
    expect(report.spearmanPooled).toBeGreaterThan(0.2);
  });
});
