/**
 * Parameters of the synthetic caption world and of the simulated captioning VLM (docs/simulator.md,
 * "Caption world"), zod, strict: an unknown key is refused. Every parameter says what it does with
 * `.describe()`. `world.json` stores the resolved parameters; `CaptionWorld.generate` rebuilds the
 * world from them exactly.
 */
import { z } from "zod";
import { ATTRIBUTES, OBJECTS, SCENES } from "./vocab.js";

const unit = z.number().min(0).max(1);
const nonNegative = z.number().min(0);

export const CaptionAnnotatorParamsSchema = z
  .strictObject({
    pool: z.number().int().min(5).max(10_000).default(60).describe("simulated annotators; each image gets 5–7 of them"),
    extraReferenceRate: unit
      .default(0.12)
      .describe("an image gets a 6th reference with this probability, and then a 7th with it again"),
    canonicalMin: unit.default(0.5).describe("lowest annotator share of canonical COCO words (uniform per annotator)"),
    canonicalMax: unit.default(0.95).describe("highest annotator share of canonical COCO words"),
    fancyRate: unit.default(0.03).describe("share of an annotator's non-canonical words that are the fancy ones"),
    attributeMin: unit.default(0.3).describe("lowest annotator rate of naming the main object's attribute"),
    attributeMax: unit.default(0.9).describe("highest annotator rate of naming the main object's attribute"),
    poseMin: unit.default(0.2).describe("lowest annotator rate of naming the pose (sitting, parked, …)"),
    poseMax: unit.default(0.9).describe("highest annotator rate of naming the pose"),
    secondObject: unit.default(0.8).describe("rate of mentioning the second object when the image has one"),
    afterSceneMax: unit
      .default(0.6)
      .describe("word order: an annotator puts the second object after the scene with a rate uniform in [0, this]"),
    openerRate: unit.default(0.08).describe("rate of starting with an opener (there is, this is, a picture of)"),
    tailRate: unit.default(0.02).describe("rate of ending with a chatty tail (in the background, …)"),
    prepositionVariation: unit
      .default(0.2)
      .describe("rate of using another preposition than the scene's usual one (at the beach)"),
    capitalise: unit.default(0.85).describe("rate of capitalising the first word (the tokenizer lower-cases it)"),
    period: unit.default(0.5).describe("rate of ending with a period (the tokenizer removes it)"),
  })
  .prefault({});

export const CaptionEmbeddingParamsSchema = z
  .strictObject({
    dim: z.number().int().min(8).max(4096).default(64).describe("dimension of image, text and joint embeddings"),
    scene: nonNegative.default(1).describe("weight of the scene vector in an image's latent content"),
    object: nonNegative.default(1).describe("weight of each object vector (the 2nd and 3rd at 0.6 and 0.4 of it)"),
    attribute: nonNegative.default(0.5).describe("weight of each object's attribute vector"),
    pose: nonNegative.default(0.3).describe("weight of the main object's pose vector"),
    imageNoise: nonNegative.default(0.7).describe("noise added to the latent content in the image embedding"),
    textNoise: nonNegative.default(0.5).describe("noise in the text embedding of a caption"),
    textSurface: nonNegative
      .default(0.25)
      .describe("weight of a word's own vector beside its concept's (puppy is near, not equal to, dog)"),
    textStyle: nonNegative
      .default(0.4)
      .describe("weight of a style vector for a caption's register and chattiness (openers, tails, fancy words)"),
    modalityGap: nonNegative
      .default(1.2)
      .describe(
        "s: image rows become normalise(v + s·u_image), text rows normalise(v + s·u_text), two random unit vectors: image–text cosines are lower than image–image ones, as CLIP's",
      ),
  })
  .prefault({});

export const CaptionModelParamsSchema = z
  .strictObject({
    priorStrength: z
      .number()
      .gt(0)
      .default(0.5)
      .describe("α: pseudo-count of the zero-shot habit against the demonstrations' weighted evidence"),
    copyBase: nonNegative.default(0.6).describe("weight every demonstration has, however unrelated"),
    relevance: nonNegative
      .default(2)
      .describe("extra weight per unit of latent content similarity with the query (max(0, cos))"),
    positionDecay: z
      .number()
      .gt(0)
      .max(1)
      .default(0.85)
      .describe("a demonstration δ slots away from the query weighs decay^δ"),
    teacherWeight: nonNegative
      .default(0.6)
      .describe("σ_m: a demonstration's weight × exp(σ_m·z − σ_m²/2), z its hidden teacher quality"),
    conceptTeach: nonNegative
      .default(2)
      .describe("μ: how strongly a demonstration naming the same concept teaches its word for it"),
    registerTeach: nonNegative
      .default(0.6)
      .describe(
        "ρ: how strongly a demonstration's register (canonical, alternative, fancy words) carries to other concepts",
      ),
    prime: nonNegative
      .default(1.2)
      .describe("logit a concept gains per unit of weight of demonstrations that name it (perception priming)"),
    otherPenalty: nonNegative
      .default(1.5)
      .describe("logit handicap of a demonstration's concept that is neither the query's nor its look-alike"),
    zeroShotOpener: unit.default(0.8).describe("zero-shot probability of the opener 'the image shows'"),
    zeroShotTail: unit.default(0.75).describe("zero-shot probability of the tail 'in the background'"),
    zeroShotAttribute: unit.default(0.9).describe("zero-shot probability of naming the attribute"),
    zeroShotPose: unit.default(0.85).describe("zero-shot probability of naming the pose"),
    zeroShotSecondObject: unit.default(0.9).describe("zero-shot probability of naming the second object"),
    zeroShotFancy: unit
      .default(0.5)
      .describe("share of concepts whose zero-shot word is the fancy one (the others: the canonical one)"),
    zeroShotPreference: z
      .number()
      .gt(1 / 3)
      .lt(1)
      .default(0.6)
      .describe("zero-shot probability of a concept's preferred word (the other two share the rest)"),
    copyThreshold: z
      .number()
      .min(-1)
      .max(1)
      .default(0.9)
      .describe("a demonstration with the query's scene and objects and latent cosine ≥ this is a near duplicate"),
    copyProbability: unit
      .default(0.15)
      .describe("share of (query, near-duplicate) pairs, by a fixed hash, where the VLM copies the caption verbatim"),
    copyMass: unit.default(0.7).describe("probability mass of the verbatim copy when the VLM copies"),
    floorLogProb: z
      .number()
      .max(0)
      .default(-9)
      .describe("log-probability of a word no slot of the caption grammar can produce"),
  })
  .prefault({});

export const CaptionWorldParamsSchema = z.strictObject({
  seed: z.number().int().default(1).describe("world seed: every draw comes from named streams of it"),
  trainItems: z.number().int().min(1).max(1_000_000).default(3000).describe("images in the train split (the index)"),
  valItems: z.number().int().min(1).max(1_000_000).default(1000).describe("images in the val split (queries)"),
  scenes: z.number().int().min(2).max(SCENES.length).default(SCENES.length).describe("latent scenes used"),
  objects: z.number().int().min(4).max(OBJECTS.length).default(OBJECTS.length).describe("object categories used"),
  attributes: z
    .number()
    .int()
    .min(2)
    .max(ATTRIBUTES.length)
    .default(ATTRIBUTES.length)
    .describe("attributes used (colours, sizes)"),
  objectsPerScene: z.number().int().min(1).default(6).describe("objects typical of a scene"),
  sceneFocus: unit.default(0.85).describe("share of objects drawn from their scene's typical ones (else any)"),
  secondObjectRate: unit.default(0.5).describe("share of images with a second object"),
  thirdObjectRate: unit.default(0.3).describe("share of two-object images with a third (never named in captions)"),
  perceptionMean: z.number().default(0.8).describe("mean clarity: the true concept's logit lead over its look-alike"),
  perceptionSd: nonNegative.default(1.3).describe("sd of clarity, drawn per image and slot (perception noise)"),
  teacherSpread: nonNegative
    .default(0.8)
    .describe(
      "τ: the first reference's log-odds of canonical words +τ·z (and of an opener −τ·z), z the hidden teacher quality",
    ),
  annotators: CaptionAnnotatorParamsSchema,
  embedding: CaptionEmbeddingParamsSchema,
  model: CaptionModelParamsSchema,
});
export type CaptionWorldParams = z.infer<typeof CaptionWorldParamsSchema>;
export type CaptionWorldParamsInput = z.input<typeof CaptionWorldParamsSchema>;
export type CaptionModelParams = z.infer<typeof CaptionModelParamsSchema>;
