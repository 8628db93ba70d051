/**
 * Parameters of the synthetic world and of the simulated VLM's answer model, with documented defaults
 * (docs/simulator.md explains each and the formula they enter). `world.json` stores the resolved
 * parameters; the world (items, latents, embeddings) and the simulator are rebuilt from them exactly.
 */
import { z } from "zod";
import { QUESTION_TYPES } from "./vocab.js";

const unit = z.number().min(0).max(1);
const nonNegative = z.number().min(0);

/** Relevance classes of a demonstration for a query: neither latent shared, same concept, same type, both. */
const PerClass = (none: number, concept: number, type: number, cell: number) =>
  z
    .strictObject({
      none: nonNegative.default(none),
      sameConcept: nonNegative.default(concept),
      sameType: nonNegative.default(type),
      sameCell: nonNegative.default(cell),
    })
    .prefault({});

export const AnswerModelParamsSchema = z
  .strictObject({
    /** λ: weight of the zero-shot answer prior, logit = λ·log p_cell(answer). */
    priorScale: nonNegative.default(1),
    /** log-probability the prior gives an answer outside the query's answer vocabulary. */
    floorLogProb: z.number().max(0).default(-7),
    /** β: the largest logit a demonstration's answer can gain (saturation ceiling). */
    pull: nonNegative.default(5.5),
    /** Copy weight every demonstration has, however irrelevant (VLMs copy demo answers). */
    copyBase: nonNegative.default(0.45),
    /** Extra copy weight by relevance class. */
    relevance: PerClass(0, 0.15, 0.2, 1.5),
    /** Confusion each class adds (irrelevant demonstrations distract from what the model sees). */
    confusion: PerClass(1, 0.5, 0, 0),
    /** Format evidence each class adds: any demonstration shows the answer format, same-type ones best. */
    format: PerClass(0.4, 0.4, 1, 1),
    /** Weight of a demonstration at distance δ from the query (δ = 0 next to it) is decay^δ. */
    positionDecay: z.number().gt(0).max(1).default(0.7),
    /** φ: largest logit gain of the true answer from format evidence. */
    formatGain: nonNegative.default(1.5),
    /** ψ: logit loss of the true answer per unit of confusion (linear: distraction keeps growing with more shots). */
    distraction: nonNegative.default(0.35),
    /** η: deterministic per (query, demonstration) jitter of the copy weight, factor in [1−η, 1+η]. */
    jitter: z.number().min(0).lt(1).default(0.3),
    /** γ: confusion flattens the distribution: logits are divided by 1 + γ·confusion. */
    flatten: nonNegative.default(0.3),
    /** Logit of the tail (every string outside the table), shared by `tailSize` strings. */
    tailLogit: z.number().default(-4),
    tailSize: z.number().int().min(1).default(1000),
    /** Share of generations with extra text that answer post-processing must remove. */
    decorationRate: unit.default(0.1),
  })
  .prefault({});
export type AnswerModelParams = z.infer<typeof AnswerModelParamsSchema>;

export const EmbeddingParamsSchema = z
  .strictObject({
    /** Dimension of image, text and joint embeddings. */
    dim: z.number().int().min(2).max(4096).default(64),
    /** Image embedding = concept·u_c + answers·mean(w_a) + noise·ξ, then L2-normalised. */
    imageConcept: nonNegative.default(1),
    imageAnswer: nonNegative.default(0.6),
    imageNoise: nonNegative.default(0.8),
    /** Text embedding = type·v_t + concept·u_c + noise·ξ, then L2-normalised. */
    textType: nonNegative.default(1),
    textConcept: nonNegative.default(0.7),
    textNoise: nonNegative.default(0.6),
    /**
     * s: every row (image, text, joint) becomes normalise(v + s·u) for one shared unit vector u, as real
     * embedding models share a large common direction: cosines are compressed towards 1 and shifted (s = 1.5
     * maps a cosine of 0 to about 0.69 and 0.5 to about 0.85), almost monotonically. Absent means 0 (the key
     * is left out, so worlds made before it existed keep their parameters, files and identities).
     */
    shared: z.number().min(0).max(100).optional(),
  })
  .prefault({});
export type EmbeddingParams = z.infer<typeof EmbeddingParamsSchema>;

export const WorldParamsSchema = z.strictObject({
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1)
    .default(1),
  /** Number of questions in the train split (the demonstration index) and the val split (queries). */
  trainItems: z.number().int().min(1).max(2_000_000).default(4000),
  valItems: z.number().int().min(1).max(2_000_000).default(1000),
  /** Latent concepts (the object an image shows). */
  concepts: z.number().int().min(1).max(100_000).default(24),
  /** How many of the built-in question types are used (first n of the list). */
  questionTypes: z.number().int().min(1).max(QUESTION_TYPES.length).default(QUESTION_TYPES.length),
  /** Each image gets 1..max questions of distinct types (VQAv2 averages ≈ 5 per image). */
  maxQuestionsPerImage: z.number().int().min(1).max(QUESTION_TYPES.length).default(5),
  /** Concept frequencies ∝ 1/(rank+1)^skew (0 = uniform). */
  conceptSkew: nonNegative.default(0.6),
  /** Spread (sd of log-weights) of a cell's answer distribution; larger = more peaked cells. */
  cellSpread: nonNegative.default(1.2),
  /** Share of true answers drawn uniformly from the whole type vocabulary instead of the cell. */
  tailRate: unit.default(0.15),
  /** Item-level visual knowledge κ ~ N(mean, sd): the zero-shot logit bonus of the true answer. */
  knowledgeMean: z.number().default(-1.0),
  knowledgeSd: nonNegative.default(1.2),
  /** Annotator disagreement: item ambiguity ε = max·u³ (u uniform), each annotator deviates w.p. ε. */
  ambiguityMax: unit.default(0.5),
  /** Share of agreeing annotators who write a surface variant ("Two", "two", "the park", "red."). */
  variantRate: unit.default(0.05),
  /**
   * Label noise: the share of items (both splits) whose annotators agree on a WRONG answer — another
   * answer of the item's cell, annotated around it the way a clean item is around its true answer — so
   * the answer such an item shows as a demonstration is wrong, and as a query it is scored against
   * wrong annotations. Absent means 0: an absent key, not a default, so the resolved parameters, the
   * `world.json` and the experiment identities of worlds made before it existed stay the same.
   */
  labelNoise: unit.optional(),
  /**
   * Item quality σ: item i's copy weight as a demonstration is multiplied by m_i = exp(σ·z_i − σ²/2),
   * z_i ~ N(0, 1) independent of everything else (mean 1). Absent means 0 (every m_i = 1), as above.
   */
  itemQuality: z.number().min(0).max(3).optional(),
  embedding: EmbeddingParamsSchema,
  model: AnswerModelParamsSchema,
});
export type WorldParams = z.infer<typeof WorldParamsSchema>;
export type WorldParamsInput = z.input<typeof WorldParamsSchema>;
