import { describe, expect, it } from "vitest";
import {
  GEN_METHODS,
  type PolicyView,
  ProposalGroup,
  type ProposalSettings,
  policyLogprobs,
  propose,
} from "../../src/datagen/proposals.js";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { beamDecode, greedyDecode } from "../../src/selector/decode.js";
import { PointerSelector } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";
import { noGrad } from "../../src/tensor/tensor.js";
import { Rng } from "../../src/util/rng.js";

const K = 6;
const config = SelectorConfigSchema.parse({ d: 5, hidden: 4, layers: 1, shots: 2, temperature: 0.5 });
const values = initParams(config, 3);
{
  const rng = new Rng(11);
  for (const v of values.values()) for (let i = 0; i < v.length; i++) v[i] += 0.5 * rng.normal();
}
const model = new PointerSelector(config, values, "float64");

function policy(seed: number): PolicyView {
  const rng = new Rng(seed);
  const input = {
    queries: Float64Array.from({ length: config.d }, () => rng.normal()),
    table: Float64Array.from({ length: K * config.d }, () => rng.normal()),
    slots: Int32Array.from({ length: K }, (_, i) => i),
    K,
  };
  return { model, enc: noGrad(() => model.encode(input)) };
}

const settings: ProposalSettings = {
  shots: 2,
  greedy: true,
  beamWidth: 3,
  temperatures: [1, 2],
  samples: 3,
  retrieval: 2,
  retrievalReversed: true,
  random: 2,
};
// Ranked by similarity: 1 and 3 tie (lower position first), then 2, 4, 5, 0.
const similarity = [0.1, 0.9, 0.5, 0.9, 0.3, 0.2];

describe("propose", () => {
  it("proposes each method in priority order with no ordered duplicate", () => {
    const view = policy(1);
    const group = propose(settings, { K, similarity, rng: new Rng(5).child("q1"), policy: view });
    const keys = group.proposals.map((p) => p.positions.join(","));
    expect(new Set(keys).size).toBe(keys.length);
    const rank = group.proposals.map((p) => GEN_METHODS.indexOf(p.genMethod));
    expect(rank).toEqual([...rank].sort((a, b) => a - b));
    for (const p of group.proposals) {
      expect(p.positions).toHaveLength(2);
      expect(new Set(p.positions).size).toBe(2);
    }
    // Greedy first; beam rank 0 is the greedy trajectory, so it is dropped as a duplicate.
    const greedy = greedyDecode(view.model, view.enc, 2)[0];
    expect(group.proposals[0]).toMatchObject({ genMethod: "greedy", positions: greedy.positions });
    const beams = beamDecode(view.model, view.enc, 2, 3)[0];
    expect(beams[0].positions).toEqual(greedy.positions);
    const kept = group.proposals.filter((p) => p.genMethod === "beam");
    expect(kept.map((p) => p.beamRank)).toEqual([1, 2]);
    expect(kept.map((p) => p.positions)).toEqual([beams[1].positions, beams[2].positions]);
    // Samples carry their temperature and sampling log-probability.
    for (const p of group.proposals.filter((x) => x.genMethod === "sample")) {
      expect([1, 2]).toContain(p.temperature);
      expect(p.sampleLogprob).toBeLessThan(0);
    }
  });

  it("takes retrieval windows of the similarity ranking and the reversed top-S exactly", () => {
    const group = propose({ ...settings, random: 0 }, { K, similarity, rng: new Rng(5) });
    expect(group.proposals.map((p) => [p.genMethod, p.positions, p.similarityScore])).toEqual([
      ["retrieval", [1, 3], 0.9],
      ["retrieval", [3, 2], 0.7],
      ["retrieval", [3, 1], 0.9],
    ]);
  });

  it("without a checkpoint proposes only retrieval and random, seeded per query", () => {
    const a = propose(settings, { K, similarity, rng: new Rng(5).child("q1") });
    const b = propose(settings, { K, similarity, rng: new Rng(5).child("q1") });
    const c = propose(settings, { K, similarity, rng: new Rng(5).child("q2") });
    expect(a.proposals.map((p) => p.genMethod)).toEqual(["retrieval", "retrieval", "retrieval", "random", "random"]);
    expect(b.proposals).toEqual(a.proposals);
    expect(c.proposals.slice(3)).not.toEqual(a.proposals.slice(3));
  });

  it("de-duplicates ORDERED trajectories: two orders of one set are two prompts", () => {
    const group = new ProposalGroup();
    const p = { temperature: null, beamRank: null, similarityScore: null, sampleLogprob: null };
    expect(group.add({ ...p, positions: [1, 3], genMethod: "beam" })).toBe(true);
    expect(group.add({ ...p, positions: [3, 1], genMethod: "sample" })).toBe(true);
    expect(group.add({ ...p, positions: [1, 3], genMethod: "retrieval" })).toBe(false);
    expect(group.proposals.map((x) => x.genMethod)).toEqual(["beam", "sample"]);
  });

  it("gives every trajectory its log-probability under the checkpoint, matching the decoders'", () => {
    const view = policy(2);
    const greedy = greedyDecode(view.model, view.enc, 2)[0];
    const beams = beamDecode(view.model, view.enc, 2, 3)[0];
    const logprobs = policyLogprobs(view, [greedy.positions, ...beams.map((b) => b.positions)]);
    expect(logprobs[0]).toBeCloseTo(greedy.logprob, 10);
    beams.forEach((b, i) => {
      expect(logprobs[i + 1]).toBeCloseTo(b.logprob, 10);
    });
  });
});
