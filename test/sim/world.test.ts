import { describe, expect, it } from "vitest";
import { normalizeAnswer } from "../../src/metrics/vqa.js";
import { splitEmbeddings } from "../../src/sim/embed.js";
import { WorldParamsSchema } from "../../src/sim/params.js";
import { KIND_WORDS, QUESTION_TYPES, SYNONYMS } from "../../src/sim/vocab.js";
import { ANNOTATORS, mostFrequent, World } from "../../src/sim/world.js";

const small = { seed: 5, trainItems: 600, valItems: 200, concepts: 12 };
const world = World.generate(small);

describe("World generation", () => {
  it("is a pure function of its parameters (same fingerprint) and changes with the seed", () => {
    const again = World.generate(small);
    expect(again.fingerprint).toBe(world.fingerprint);
    expect(again.questionIds).toEqual(world.questionIds);
    expect(again.annotatorAnswers).toEqual(world.annotatorAnswers);
    expect(World.generate({ ...small, seed: 6 }).fingerprint).not.toBe(world.fingerprint);
  });

  it("has exactly the requested number of questions per split, unique ids, in question-id order", () => {
    expect(world.itemsOf("train")).toHaveLength(600);
    expect(world.itemsOf("val")).toHaveLength(200);
    expect(new Set(world.questionIds).size).toBe(800);
    for (const split of ["train", "val"] as const) {
      const ids = world.itemsOf(split).map((i) => Number(world.questionIds[i]));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
    const trainImages = new Set(world.imagesOf("train").map((im) => im.imageId));
    expect(world.imagesOf("val").some((im) => trainImages.has(im.imageId))).toBe(false);
  });

  it("gives several questions per image, VQAv2-style ids (image_id·1000 + k) and distinct types on one image", () => {
    let multi = 0;
    for (const image of world.images) {
      const types = new Set<number>();
      for (let k = 0; k < image.count; k++) {
        const i = image.firstItem + k;
        expect(world.questionIds[i]).toBe(String(image.imageId * 1000 + k));
        expect(world.imageOf[i]).toBe(world.images.indexOf(image));
        expect(world.concept[i]).toBe(image.concept);
        types.add(world.qtype[i]);
      }
      expect(types.size).toBe(image.count);
      if (image.count > 1) multi++;
    }
    expect(multi / world.images.length).toBeGreaterThan(0.5);
  });

  it("rejects unknown or out-of-range parameters with the field named", () => {
    expect(() => WorldParamsSchema.parse({ concepts: 0 })).toThrow(/concepts/);
    expect(() => WorldParamsSchema.parse({ model: { pul: 1 } })).toThrow(/pul/);
    expect(() => WorldParamsSchema.parse({ model: { jitter: 1 } })).toThrow(/jitter/);
    const defaults = WorldParamsSchema.parse({});
    expect(defaults.model.relevance.sameCell).toBeGreaterThan(defaults.model.relevance.sameType);
    expect(defaults.embedding.dim).toBe(64);
  });

  it("keeps every canonical answer in normalised form, with variants that normalise back to it", () => {
    for (const text of world.registry.canonical) expect(normalizeAnswer(text)).toBe(text);
    for (const spec of QUESTION_TYPES)
      if (spec.vocab !== "per-concept")
        expect(world.registry.idOf(spec.vocab[0])).toBe(world.registry.idOf(spec.vocab[0].toUpperCase()));
    expect(world.registry.idOf("Two")).toBe(world.registry.idOf("2"));
    expect(world.registry.idOf("the park.")).toBe(world.registry.idOf("park"));
    expect(world.registry.idOf("grey")).not.toBe(world.registry.idOf("gray"));
    expect(world.registry.idOf("no such answer")).toBe(-1);
    expect(KIND_WORDS.every((w) => world.registry.idOf(w) >= 0)).toBe(true);
    expect(Object.values(SYNONYMS).every((w) => world.registry.idOf(w) >= 0)).toBe(true);
  });

  it("draws true answers from the query cell's vocabulary, whose probabilities sum to 1", () => {
    for (let c = 0; c < small.concepts; c++)
      for (let t = 0; t < world.questionTypeCount; t++) {
        const cell = world.cell(c, t);
        expect(cell.prob.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
        expect(cell.logProb[0]).toBeCloseTo(Math.log(cell.prob[0]), 12);
      }
    for (let i = 0; i < world.size; i++) {
      const cell = world.cell(world.concept[i], world.qtype[i]);
      expect(Array.from(cell.vocab)).toContain(world.trueAnswer[i]);
    }
  });

  it("has ten annotators who mostly agree with the truth, with realistic disagreement and surface variants", () => {
    let majorityIsTruth = 0;
    let unanimous = 0;
    let variantSeen = 0;
    let otherAnswerSeen = 0;
    for (let i = 0; i < world.size; i++) {
      const answers = world.annotatorAnswers[i];
      expect(answers).toHaveLength(ANNOTATORS);
      expect(world.annotatorConfidences[i].every((c) => ["yes", "maybe", "no"].includes(c))).toBe(true);
      expect(world.shownAnswer[i]).toBe(mostFrequent(answers));
      const truth = world.registry.canonical[world.trueAnswer[i]];
      if (normalizeAnswer(world.shownAnswer[i]) === truth) majorityIsTruth++;
      if (new Set(answers).size === 1) unanimous++;
      if (answers.some((a) => a !== truth && normalizeAnswer(a) === truth)) variantSeen++;
      if (answers.some((a) => normalizeAnswer(a) !== truth)) otherAnswerSeen++;
    }
    const n = world.size;
    expect(majorityIsTruth / n).toBeGreaterThan(0.95);
    expect(unanimous / n).toBeGreaterThan(0.2);
    expect(unanimous / n).toBeLessThan(0.6);
    expect(variantSeen / n).toBeGreaterThan(0.2);
    expect(otherAnswerSeen / n).toBeGreaterThan(0.1);
    expect(otherAnswerSeen / n).toBeLessThan(0.6);
  });

  it("mixes answer types roughly like VQAv2 (yes/no ≈ 1/3, number ≈ 1/8, other ≈ 1/2)", () => {
    const counts = { "yes/no": 0, number: 0, other: 0 };
    for (let i = 0; i < world.size; i++) counts[world.typeSpec(world.qtype[i]).answerType]++;
    expect(counts["yes/no"] / world.size).toBeGreaterThan(0.22);
    expect(counts["yes/no"] / world.size).toBeLessThan(0.45);
    expect(counts.number / world.size).toBeGreaterThan(0.06);
    expect(counts.other / world.size).toBeGreaterThan(0.35);
  });

  it("breaks most-frequent ties by first occurrence, like Python's Counter.most_common", () => {
    expect(mostFrequent(["b", "a", "a", "b"])).toBe("b");
    expect(mostFrequent(["x", "y", "y"])).toBe("y");
  });
});

describe("World embeddings", () => {
  const dim = 16;
  const w = World.generate({ ...small, embedding: { dim } });
  const train = splitEmbeddings(w, "train");
  const rows = train.ids.map((id) => w.indexOf(id));
  const row = (m: Float32Array, r: number) => Array.from(m.subarray(r * dim, (r + 1) * dim));
  const dot = (a: number[], b: number[]) => a.reduce((s, x, k) => s + x * b[k], 0);

  it("lists the split's question ids in item order and is deterministic", () => {
    expect(train.ids).toEqual(w.itemsOf("train").map((i) => w.questionIds[i]));
    expect(train.image).toHaveLength(600 * dim);
    const again = splitEmbeddings(World.generate({ ...small, embedding: { dim } }), "train");
    expect(Array.from(again.joint)).toEqual(Array.from(train.joint));
  });

  it("has unit rows, shares the image embedding within an image, and joint = normalise(image + text)", () => {
    for (let r = 0; r < rows.length; r++) {
      for (const m of [train.image, train.text, train.joint]) expect(Math.hypot(...row(m, r))).toBeCloseTo(1, 5);
      const sum = row(train.image, r).map((x, k) => x + train.text[r * dim + k]);
      const norm = Math.hypot(...sum);
      row(train.joint, r).forEach((x, k) => {
        expect(x).toBeCloseTo(sum[k] / norm, 5);
      });
      if (r > 0 && w.imageOf[rows[r]] === w.imageOf[rows[r - 1]])
        expect(row(train.image, r)).toEqual(row(train.image, r - 1));
    }
  });

  it("makes text similarity reveal the question type and image similarity the concept", () => {
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const sameType: number[] = [];
    const otherType: number[] = [];
    const sameConcept: number[] = [];
    const otherConcept: number[] = [];
    for (let a = 0; a < 200; a++)
      for (let b = a + 1; b < 200; b++) {
        const [i, j] = [rows[a], rows[b]];
        if (w.imageOf[i] === w.imageOf[j]) continue;
        (w.qtype[i] === w.qtype[j] ? sameType : otherType).push(dot(row(train.text, a), row(train.text, b)));
        (w.concept[i] === w.concept[j] ? sameConcept : otherConcept).push(
          dot(row(train.image, a), row(train.image, b)),
        );
      }
    expect(mean(sameType) - mean(otherType)).toBeGreaterThan(0.3);
    expect(mean(sameConcept) - mean(otherConcept)).toBeGreaterThan(0.3);
  });
});
