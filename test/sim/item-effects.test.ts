import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { normalizeAnswer } from "../../src/metrics/vqa.js";
import { splitEmbeddings } from "../../src/sim/embed.js";
import { pairHash } from "../../src/sim/model.js";
import { SimVlm, worldFileContent } from "../../src/sim/vlm.js";
import { SPLITS, World } from "../../src/sim/world.js";

const base = { seed: 9, trainItems: 3000, valItems: 1000, concepts: 12 };
const plain = World.generate(base);
const noisy = World.generate({ ...base, labelNoise: 0.25 });
const quality = World.generate({ ...base, itemQuality: 0.8 });

const mean = (xs: ArrayLike<number>) => Array.from(xs).reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs: ArrayLike<number>) => Math.sqrt(mean(Array.from(xs, (x) => (x - mean(xs)) ** 2)));

/** Share of an item's annotators whose normalised answer is its shown answer's. */
function agreement(world: World, i: number): number {
  const shown = normalizeAnswer(world.shownAnswer[i]);
  return mean(world.annotatorAnswers[i].map((a) => (normalizeAnswer(a) === shown ? 1 : 0)));
}

/** Byte-wise equality of typed arrays (toEqual on 200k floats is slow). */
const bytes = (a: Float32Array | Float64Array | Int32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** Everything but the annotators equals the plain world's: latents, questions, embeddings. */
function expectSameLatentsAndEmbeddings(world: World): void {
  expect(world.questionIds.join()).toBe(plain.questionIds.join());
  expect(world.questions.join()).toBe(plain.questions.join());
  for (const field of ["concept", "qtype", "trueAnswer", "knowledge"] as const)
    expect(bytes(world[field]).equals(bytes(plain[field]))).toBe(true);
  for (const split of SPLITS) {
    const [mine, theirs] = [splitEmbeddings(world, split), splitEmbeddings(plain, split)];
    for (const kind of ["image", "text", "joint"] as const)
      expect(bytes(mine[kind]).equals(bytes(theirs[kind]))).toBe(true);
  }
}

describe("world parameters off", () => {
  it("absent or 0 are the same world: every quality 1, no wrong answer", () => {
    const zero = World.generate({ ...base, labelNoise: 0, itemQuality: 0 });
    expect(zero.fingerprint).toBe(plain.fingerprint);
    expect(JSON.stringify(zero.annotatorAnswers)).toBe(JSON.stringify(plain.annotatorAnswers));
    expect([...plain.quality].every((m) => m === 1)).toBe(true);
    expect([...plain.wrongAnswer].every((w) => w === -1)).toBe(true);
    expect(JSON.stringify(worldFileContent(plain))).not.toMatch(/labelNoise|itemQuality/);
  });

  it("still loads a world.json written before they existed (e39fe92)", () => {
    const file = join(import.meta.dirname, "../fixtures/sim/world-e39fe92.json");
    const written = JSON.parse(readFileSync(file, "utf8"));
    expect(SimVlm.fromWorldFile(file).world.fingerprint).toBe(written.fingerprint);
  });
});

describe("label noise", () => {
  const noisyItems = (world: World, split: (typeof SPLITS)[number]) =>
    world.itemsOf(split).filter((i) => world.wrongAnswer[i] >= 0);

  it("makes about ρ of each split's items agree on a wrong answer of their cell, and changes only their annotators", () => {
    for (const split of SPLITS) {
      const share = noisyItems(noisy, split).length / noisy.itemsOf(split).length;
      expect(share).toBeGreaterThan(0.2);
      expect(share).toBeLessThan(0.3);
    }
    let shownWrong = 0;
    const all = [...noisyItems(noisy, "train"), ...noisyItems(noisy, "val")];
    for (const i of all) {
      const wrong = noisy.wrongAnswer[i];
      expect(wrong).not.toBe(noisy.trueAnswer[i]);
      expect([...noisy.cell(noisy.concept[i], noisy.qtype[i]).vocab]).toContain(wrong);
      if (noisy.registry.idOf(noisy.shownAnswer[i]) === wrong) shownWrong++;
    }
    expect(shownWrong / all.length).toBeGreaterThan(0.95);
    for (let i = 0; i < noisy.size; i++)
      if (noisy.wrongAnswer[i] < 0) expect(noisy.annotatorAnswers[i]).toEqual(plain.annotatorAnswers[i]);
    expectSameLatentsAndEmbeddings(noisy);
    expect(noisy.fingerprint).not.toBe(plain.fingerprint);
  });

  it("draws a noisy item's annotators like a clean item's: agreement does not give it away", () => {
    const large = World.generate({ ...base, trainItems: 16_000, valItems: 10, labelNoise: 0.25 });
    const all = large.itemsOf("train");
    const agreeNoisy = all.filter((i) => large.wrongAnswer[i] >= 0).map((i) => agreement(large, i));
    const agreeClean = all.filter((i) => large.wrongAnswer[i] < 0).map((i) => agreement(large, i));
    expect(agreeNoisy.length).toBeGreaterThan(3500);
    expect(Math.abs(mean(agreeNoisy) - mean(agreeClean))).toBeLessThan(0.01);
    const unanimous = (xs: number[]) => xs.filter((x) => x === 1).length / xs.length;
    expect(Math.abs(unanimous(agreeNoisy) - unanimous(agreeClean))).toBeLessThan(0.03);
  });

  it("is monotone in ρ: an item noisy at 0.1 is noisy at 0.25 with the same wrong answer", () => {
    const fewer = World.generate({ ...base, labelNoise: 0.1 });
    let count = 0;
    for (let i = 0; i < fewer.size; i++)
      if (fewer.wrongAnswer[i] >= 0) {
        count++;
        expect(noisy.wrongAnswer[i]).toBe(fewer.wrongAnswer[i]);
        expect(noisy.annotatorAnswers[i]).toEqual(fewer.annotatorAnswers[i]);
      }
    expect(count).toBeGreaterThan(0.07 * fewer.size);
  });
});

describe("item quality", () => {
  it("draws m = exp(σz − σ²/2): mean 1, log-sd σ, independent of the other latents, which stay as they were", () => {
    const logs = Array.from(quality.quality, Math.log);
    expect(mean(quality.quality)).toBeCloseTo(1, 1);
    expect(sd(logs)).toBeCloseTo(0.8, 1);
    expect(mean(logs)).toBeCloseTo(-0.32, 1);
    const k = Array.from(quality.knowledge);
    const r = mean(logs.map((l, i) => (l - mean(logs)) * (k[i] - mean(k)))) / (sd(logs) * sd(k));
    expect(Math.abs(r)).toBeLessThan(0.05);
    expect(JSON.stringify(quality.annotatorAnswers)).toBe(JSON.stringify(plain.annotatorAnswers));
    expectSameLatentsAndEmbeddings(quality);
    expect(quality.fingerprint).not.toBe(plain.fingerprint);
  });

  it("multiplies a demonstration's copy weight: logit = prior + pull·(1 − e^{−w·m}) (hand case)", () => {
    const sim = new SimVlm(quality);
    const model = sim.model;
    const m = quality.params.model;
    const [q] = quality.itemsOf("val");
    const train = quality.itemsOf("train");
    for (const d of train.slice(0, 40)) {
      const cls = model.relevanceClass(q, d);
      const classWeight =
        m.copyBase + [m.relevance.none, m.relevance.sameConcept, m.relevance.sameType, m.relevance.sameCell][cls];
      const weight = classWeight * (1 + m.jitter * pairHash(q, d)) * quality.quality[d];
      expect(model.copyWeight(q, d)).toBeCloseTo(weight, 14);
      const answer = sim.answerId(quality.shownAnswer[d]);
      model.evaluate(q, [d], [answer], 1, false);
      const slot = model.slotOf(answer);
      const cell = quality.cell(quality.concept[q], quality.qtype[q]);
      const k = [...cell.vocab].indexOf(answer);
      const prior = m.priorScale * (k >= 0 ? cell.logProb[k] : m.floorLogProb);
      expect(model.logits[slot]).toBeCloseTo(prior + m.pull * (1 - Math.exp(-weight)), 12);
    }
  });

  it("round-trips through world.json with both parameters on", () => {
    const both = World.generate({ ...base, trainItems: 400, valItems: 100, labelNoise: 0.25, itemQuality: 0.8 });
    const file = join(mkdtempSync(join(tmpdir(), "lever-effects-")), "world.json");
    writeFileSync(file, JSON.stringify(worldFileContent(both)));
    const rebuilt = SimVlm.fromWorldFile(file).world;
    expect(rebuilt.fingerprint).toBe(both.fingerprint);
    expect(rebuilt.quality).toEqual(both.quality);
    expect(rebuilt.params.labelNoise).toBe(0.25);
  });
});
