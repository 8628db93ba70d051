/**
 * The synthetic VQA world (docs/simulator.md). Images show a latent concept; each image carries 1..n
 * questions of distinct latent question types; each question's true answer is drawn from the
 * answer distribution of its (concept, type) cell, so demonstrations from the same cell or type
 * carry information about a query's answer. Ten annotators answer each question with realistic
 * disagreement. Everything comes from named `Rng` children of one seed, so `World.generate(params)`
 * rebuilds the identical world from `world.json`.
 *
 * The latent fields (concept, qtype, trueAnswer, knowledge, quality, wrongAnswer) are for the simulator
 * only: nothing outside src/sim/ may read them (the selector sees embeddings).
 */
import { createHash } from "node:crypto";
import { check } from "../util/errors.js";
import { Rng } from "../util/rng.js";
import { itemQualities, type NoiseTarget, noisyAnswers } from "./item-effects.js";
import { answerKey } from "./metric.js";
import { type WorldParams, type WorldParamsInput, WorldParamsSchema } from "./params.js";
import {
  conceptName,
  KIND_WORDS,
  normalisingVariants,
  PER_CONCEPT_VOCAB,
  QUESTION_TYPES,
  type QuestionTypeSpec,
  SYNONYMS,
} from "./vocab.js";

export const SPLITS = ["train", "val"] as const;
export type Split = (typeof SPLITS)[number];

export const ANNOTATORS = 10;

/**
 * All answer strings the world knows, one id per normalised key. Ids are stable for a given
 * vocabulary (they do not depend on the parameters).
 */
export class AnswerRegistry {
  readonly canonical: string[] = [];
  private readonly byKey = new Map<string, number>();

  add(text: string): number {
    const key = answerKey(text);
    const existing = this.byKey.get(key);
    if (existing !== undefined) return existing;
    this.byKey.set(key, this.canonical.length);
    this.canonical.push(text);
    return this.canonical.length - 1;
  }

  /** Id of an answer string (any surface form that normalises to a known answer), or -1. */
  idOf(text: string): number {
    return this.byKey.get(answerKey(text)) ?? -1;
  }

  get size(): number {
    return this.canonical.length;
  }
}

/** The answer distribution of one (concept, type) cell over that cell's answer vocabulary. */
export interface Cell {
  /** Answer ids of the vocabulary (the type's answers, or the concept's own for per-concept types). */
  vocab: Int32Array;
  /** Probabilities, aligned with `vocab`. */
  prob: Float64Array;
  /** log(prob), aligned with `vocab`. */
  logProb: Float64Array;
}

export interface WorldImage {
  imageId: number;
  split: Split;
  concept: number;
  /** Index of the image's first item; its items are consecutive. */
  firstItem: number;
  count: number;
}

export class World {
  readonly registry = new AnswerRegistry();
  /** Cells in row-major order: cell(c, t) = cells[c * questionTypes + t]. */
  readonly cells: Cell[] = [];
  readonly images: WorldImage[] = [];

  // One entry per item (train items first, then val), in question-id order within a split.
  readonly questionIds: string[] = [];
  readonly splitOf: Split[] = [];
  readonly imageOf: number[] = [];
  readonly questions: string[] = [];
  readonly annotatorAnswers: string[][] = [];
  readonly annotatorConfidences: string[][] = [];
  /** The answer a demonstration shows: most frequent annotator string, ties to the first. */
  readonly shownAnswer: string[] = [];
  // Latents (simulator only).
  concept = new Int32Array(0);
  qtype = new Int32Array(0);
  trueAnswer = new Int32Array(0);
  knowledge = new Float64Array(0);
  /** Copy-weight multiplier of each item as a demonstration (item quality; all 1 when off). */
  quality: Float64Array = new Float64Array(0);
  /** The wrong answer a noisy item's annotators agree on (label noise), -1 for a clean item. */
  wrongAnswer: Int32Array = new Int32Array(0);

  private readonly indexById = new Map<string, number>();
  private fingerprintValue = "";

  private constructor(readonly params: WorldParams) {}

  /** Builds the world for `input` (validated; defaults filled in). Deterministic in the parameters. */
  static generate(input: WorldParamsInput): World {
    const world = new World(WorldParamsSchema.parse(input));
    world.build();
    return world;
  }

  get size(): number {
    return this.questionIds.length;
  }

  get questionTypeCount(): number {
    return this.params.questionTypes;
  }

  typeSpec(t: number): QuestionTypeSpec {
    return QUESTION_TYPES[t];
  }

  cell(concept: number, qtype: number): Cell {
    return this.cells[concept * this.params.questionTypes + qtype];
  }

  /** Item index of a question id, or -1. */
  indexOf(questionId: string): number {
    return this.indexById.get(questionId) ?? -1;
  }

  /** Item indices of a split, in question-id order. */
  itemsOf(split: Split): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.size; i++) if (this.splitOf[i] === split) out.push(i);
    return out;
  }

  imagesOf(split: Split): WorldImage[] {
    return this.images.filter((image) => image.split === split);
  }

  /** sha256 over every item's id, shown answer and latents: detects a world rebuilt differently. */
  get fingerprint(): string {
    return this.fingerprintValue;
  }

  private build(): void {
    const p = this.params;
    const rng = new Rng(p.seed);
    this.buildRegistry();
    this.buildCells(rng.child("cells"), this.conceptVocabularies(rng.child("concept-vocab")));
    const items: ItemDraft[] = [];
    let nextImageId = 0;
    for (const split of SPLITS) {
      const count = split === "train" ? p.trainItems : p.valItems;
      nextImageId = this.drawSplit(rng.child(`items:${split}`), split, count, nextImageId, items) + 1000;
    }
    this.concept = Int32Array.from(items, (d) => d.concept);
    this.qtype = Int32Array.from(items, (d) => d.qtype);
    this.trueAnswer = Int32Array.from(items, (d) => d.trueAnswer);
    this.knowledge = Float64Array.from(items, (d) => d.knowledge);
    this.quality = itemQualities(p, rng.child("item-quality"), items.length);
    this.wrongAnswer = noisyAnswers(p, rng.child("label-noise"), this.noiseTargets(), (r, i, answer) =>
      this.reannotate(r, i, answer),
    );
    // The new latents enter only when their parameter is on, so older worlds keep their fingerprint.
    const quality = (p.itemQuality ?? 0) > 0;
    const noise = (p.labelNoise ?? 0) > 0;
    const hash = createHash("sha256");
    items.forEach((d, i) => {
      this.indexById.set(this.questionIds[i], i);
      const extra = `${quality ? `|q${this.quality[i]}` : ""}${noise ? `|w${this.wrongAnswer[i]}` : ""}`;
      hash.update(
        `${this.questionIds[i]}|${this.shownAnswer[i]}|${d.concept}|${d.qtype}|${d.trueAnswer}|${d.knowledge}${extra}\n`,
      );
    });
    this.fingerprintValue = hash.digest("hex");
  }

  private noiseTargets(): NoiseTarget[] {
    return this.questionIds.map((questionId, i) => {
      const { vocab, prob } = this.cell(this.concept[i], this.qtype[i]);
      return { questionId, vocab, prob, trueAnswer: this.trueAnswer[i] };
    });
  }

  /** Draws item i's annotators anew around `answer` (a noisy item's wrong answer). */
  private reannotate(rng: Rng, i: number, answer: number): void {
    const cell = this.cell(this.concept[i], this.qtype[i]);
    const { answers, confidences } = this.annotate(rng, cell, answer, QUESTION_TYPES[this.qtype[i]]);
    this.annotatorAnswers[i] = answers;
    this.annotatorConfidences[i] = confidences;
    this.shownAnswer[i] = mostFrequent(answers);
  }

  /** Every type's vocabulary for all built-in types (so ids do not depend on `questionTypes`), then kinds, synonyms. */
  private buildRegistry(): void {
    for (const spec of QUESTION_TYPES)
      if (spec.vocab !== "per-concept") for (const a of spec.vocab) this.registry.add(a);
    for (const a of KIND_WORDS) this.registry.add(a);
    for (const a of Object.values(SYNONYMS)) this.registry.add(a);
  }

  /** Each concept's own answers for "per-concept" types ("what kind of"). */
  private conceptVocabularies(rng: Rng): Int32Array[] {
    const out: Int32Array[] = [];
    for (let c = 0; c < this.params.concepts; c++) {
      const picks = rng.sampleWithoutReplacement(KIND_WORDS.length, PER_CONCEPT_VOCAB);
      out.push(Int32Array.from(picks, (k) => this.registry.idOf(KIND_WORDS[k])));
    }
    return out;
  }

  private buildCells(rng: Rng, conceptVocab: Int32Array[]): void {
    const p = this.params;
    for (let c = 0; c < p.concepts; c++) {
      for (let t = 0; t < p.questionTypes; t++) {
        const spec = QUESTION_TYPES[t];
        const vocab =
          spec.vocab === "per-concept" ? conceptVocab[c] : Int32Array.from(spec.vocab, (a) => this.registry.idOf(a));
        const n = vocab.length;
        const support = Math.min(spec.cellSupport, n);
        // Counts cluster (a window of small neighbouring numbers); other cells favour a random subset.
        const members =
          spec.answerType === "number"
            ? windowFrom(rng.int(Math.min(7, n - support + 1)), support)
            : rng.sampleWithoutReplacement(n, support);
        const weight = new Float64Array(n);
        let total = 0;
        for (const m of members) {
          weight[m] = Math.exp(p.cellSpread * rng.normal());
          total += weight[m];
        }
        const prob = new Float64Array(n);
        for (let k = 0; k < n; k++) prob[k] = ((1 - p.tailRate) * weight[k]) / total + p.tailRate / n;
        this.cells.push({ vocab, prob, logProb: prob.map(Math.log) });
      }
    }
  }

  /** Draws one split's images and questions; returns the last image id used. */
  private drawSplit(rng: Rng, split: Split, count: number, firstImageId: number, items: ItemDraft[]): number {
    const p = this.params;
    const conceptWeights = Array.from({ length: p.concepts }, (_, c) => 1 / (c + 1) ** p.conceptSkew);
    const typeWeights = QUESTION_TYPES.slice(0, p.questionTypes).map((spec) => spec.frequency);
    let imageId = firstImageId;
    let made = 0;
    while (made < count) {
      imageId += 1 + rng.int(20);
      const concept = rng.categorical(conceptWeights);
      const n = Math.min(1 + rng.int(p.maxQuestionsPerImage), p.questionTypes, count - made);
      const types = drawDistinct(rng, typeWeights, n);
      const firstItem = items.length;
      this.images.push({ imageId, split, concept, firstItem, count: n });
      types.forEach((qtype, k) => {
        const cell = this.cell(concept, qtype);
        const trueAnswer = cell.vocab[rng.categorical(cell.prob)];
        const knowledge = p.knowledgeMean + p.knowledgeSd * rng.normal();
        const spec = QUESTION_TYPES[qtype];
        const question = spec.template(conceptName(concept), rng.int(10));
        const { answers, confidences } = this.annotate(rng, cell, trueAnswer, spec);
        items.push({ concept, qtype, trueAnswer, knowledge });
        this.questionIds.push(String(imageId * 1000 + k));
        this.splitOf.push(split);
        this.imageOf.push(this.images.length - 1);
        this.questions.push(question);
        this.annotatorAnswers.push(answers);
        this.annotatorConfidences.push(confidences);
        this.shownAnswer.push(mostFrequent(answers));
      });
      made += n;
    }
    return imageId;
  }

  /**
   * Ten annotators: with probability 1−ε an annotator gives the true answer (sometimes as a surface
   * variant the official normalisation undoes), otherwise a confusable answer (a synonym, or
   * another answer of the cell). ε = ambiguityMax·u³ is the item's ambiguity. `trueAnswer` is the
   * answer the annotators agree on: a noisy item's wrong answer when called for label noise.
   */
  private annotate(
    rng: Rng,
    cell: Cell,
    trueAnswer: number,
    spec: QuestionTypeSpec,
  ): { answers: string[]; confidences: string[] } {
    const p = this.params;
    const truth = this.registry.canonical[trueAnswer];
    const ambiguity = p.ambiguityMax * rng.next() ** 3;
    const variants = normalisingVariants(truth, spec.answerType);
    const others = Float64Array.from(cell.vocab, (id, k) => (id === trueAnswer ? 0 : cell.prob[k]));
    const hasOthers = others.some((w) => w > 0);
    const answers: string[] = [];
    const confidences: string[] = [];
    for (let i = 0; i < ANNOTATORS; i++) {
      if (rng.next() < ambiguity && (hasOthers || truth in SYNONYMS)) {
        const useSynonym = truth in SYNONYMS && (!hasOthers || rng.next() < 0.4);
        answers.push(useSynonym ? SYNONYMS[truth] : this.registry.canonical[cell.vocab[rng.categorical(others)]]);
        const u = rng.next();
        confidences.push(u < 0.6 ? "maybe" : u < 0.9 ? "yes" : "no");
      } else {
        answers.push(rng.next() < p.variantRate ? variants[rng.int(variants.length)] : truth);
        confidences.push(rng.next() < 0.9 ? "yes" : "maybe");
      }
    }
    return { answers, confidences };
  }
}

interface ItemDraft {
  concept: number;
  qtype: number;
  trueAnswer: number;
  knowledge: number;
}

function windowFrom(start: number, length: number): number[] {
  return Array.from({ length }, (_, k) => start + k);
}

/** n distinct indices drawn in turn with probability ∝ weight among those not yet drawn. */
function drawDistinct(rng: Rng, weights: readonly number[], n: number): number[] {
  const w = weights.slice();
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    const i = rng.categorical(w);
    out.push(i);
    w[i] = 0;
  }
  return out;
}

/** Python `Counter(xs).most_common(1)`: highest count, ties to the first occurrence. */
export function mostFrequent(values: readonly string[]): string {
  check(values.length > 0, "mostFrequent of an empty list");
  const counts = new Map<string, number>();
  let best = values[0];
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  for (const v of values) if ((counts.get(v) ?? 0) > (counts.get(best) ?? 0)) best = v;
  return best;
}
