/**
 * Embeddings of the caption world, one row per item, rows L2-normalised, dim `embedding.dim`:
 *
 *   content_i = scene·u_s + object·(o_1 + 0.6·o_2 + 0.4·o_3) + attribute·(a_1 + 0.6·a_2 + 0.4·a_3) + pose·v_p
 *   image_i   = normalise(normalise(content_i + imageNoise·ξ) + gap·g_image)
 *   text_i    = normalise(normalise(Σ_mentions role·(u_c + textSurface·w_word) + textStyle·style + textNoise·ξ) + gap·g_text)
 *   joint_i   = normalise(image_i + text_i)
 *
 * text is the embedding of the item's FIRST reference as the VLM reads it (src/sim/caption/lexicon.ts):
 * the concepts it names (a synonym is near its concept, not equal to it), plus a style vector for its
 * chattiness (opener, tail) and register (share of fancy and of canonical words). Query image vs
 * candidate caption cosines are meaningful (same concept vectors) but lower than image–image ones (the
 * modality offsets g, as CLIP's modality gap). u, o, a, v, w, g, ξ have i.i.d. N(0, 1/dim) entries from
 * named streams of the seed. `contentVectors` (normalised content, no noise) is what the simulated VLM
 * uses for the latent similarity of two images.
 */
import { Rng } from "../../util/rng.js";
import type { Split } from "../world.js";
import { CONCEPT_KINDS, CONCEPT_SPECS, type ConceptKind, type Lexicon, parseCaption } from "./lexicon.js";
import type { CaptionWorld } from "./world.js";

export interface CaptionSplitEmbeddings {
  /** Item ids of the rows (image ids as strings), in the split's order. */
  ids: string[];
  dim: number;
  image: Float32Array;
  text: Float32Array;
  joint: Float32Array;
}

const SECOND = [1, 0.6, 0.4];

/** The latent vectors every embedding is built from. */
class Vectors {
  readonly concept: Record<ConceptKind, Float64Array>;
  readonly word: Float64Array;
  readonly style: Float64Array;
  readonly gap: Float64Array;

  constructor(
    readonly world: CaptionWorld,
    readonly lexicon: Lexicon,
  ) {
    const dim = world.params.embedding.dim;
    const rng = new Rng(world.params.seed).child("caption-embeddings");
    const gaussian = (name: string, rows: number) => {
      const r = rng.child(name);
      const out = new Float64Array(rows * dim);
      for (let k = 0; k < out.length; k++) out[k] = r.normal() / Math.sqrt(dim);
      return out;
    };
    this.concept = Object.fromEntries(
      CONCEPT_KINDS.map((kind) => [kind, gaussian(kind, CONCEPT_SPECS[kind].length)]),
    ) as Record<ConceptKind, Float64Array>;
    this.word = gaussian("words", lexicon.phrases.length);
    this.style = gaussian("style", 3);
    this.gap = gaussian("gap", 2);
    for (const row of [0, 1]) normalise(this.gap.subarray(row * dim, (row + 1) * dim));
  }

  /** Unnormalised latent content of item i. */
  content(i: number, out: Float64Array): void {
    const w = this.world;
    const e = w.params.embedding;
    out.fill(0);
    this.addRow(out, this.concept.scene, w.scene[i], e.scene);
    for (let k = 0; k < 3; k++) {
      const object = w.objects[k][i];
      if (object < 0) continue;
      this.addRow(out, this.concept.object, object, e.object * SECOND[k]);
      this.addRow(out, this.concept.attribute, w.attributes[k][i], e.attribute * SECOND[k]);
    }
    this.addRow(out, this.concept.pose, w.pose[i], e.pose);
  }

  addRow(out: Float64Array, matrix: Float64Array, row: number, weight: number): void {
    const dim = out.length;
    for (let k = 0; k < dim; k++) out[k] += weight * matrix[row * dim + k];
  }
}

/** Normalised noise-free content of every item, row-major [items, dim] (the VLM's image similarity). */
export function contentVectors(world: CaptionWorld, lexicon: Lexicon): Float64Array {
  const vectors = new Vectors(world, lexicon);
  const dim = world.params.embedding.dim;
  const out = new Float64Array(world.size * dim);
  const row = new Float64Array(dim);
  for (let i = 0; i < world.size; i++) {
    vectors.content(i, row);
    normalise(row);
    out.set(row, i * dim);
  }
  return out;
}

/** The image, text and joint embeddings of one split. Deterministic. */
export function captionSplitEmbeddings(world: CaptionWorld, lexicon: Lexicon, split: Split): CaptionSplitEmbeddings {
  const e = world.params.embedding;
  const dim = e.dim;
  const vectors = new Vectors(world, lexicon);
  const noise = new Rng(world.params.seed).child("caption-embeddings").child(`noise:${split}`);
  const items = world.itemsOf(split);
  const image = new Float32Array(items.length * dim);
  const text = new Float32Array(items.length * dim);
  const joint = new Float32Array(items.length * dim);
  const img = new Float64Array(dim);
  const txt = new Float64Array(dim);
  items.forEach((i, row) => {
    vectors.content(i, img);
    for (let k = 0; k < dim; k++) img[k] += (e.imageNoise * noise.normal()) / Math.sqrt(dim);
    normalise(img);
    captionVector(vectors, world.references[i][0], txt);
    for (let k = 0; k < dim; k++) txt[k] += (e.textNoise * noise.normal()) / Math.sqrt(dim);
    normalise(txt);
    for (let k = 0; k < dim; k++) {
      img[k] += e.modalityGap * vectors.gap[k];
      txt[k] += e.modalityGap * vectors.gap[dim + k];
    }
    normalise(img);
    normalise(txt);
    let norm = 0;
    for (let k = 0; k < dim; k++) norm += (img[k] + txt[k]) ** 2;
    const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let k = 0; k < dim; k++) {
      image[row * dim + k] = img[k];
      text[row * dim + k] = txt[k];
      joint[row * dim + k] = (img[k] + txt[k]) * inv;
    }
  });
  return { ids: items.map((i) => world.itemIds[i]), dim, image, text, joint };
}

/** The noise-free text vector of a caption: named concepts, their words, and style. */
function captionVector(vectors: Vectors, caption: string, out: Float64Array): void {
  const e = vectors.world.params.embedding;
  const parsed = parseCaption(vectors.lexicon, caption);
  out.fill(0);
  const objectsSeen = { count: 0 };
  for (const m of parsed.mentions) {
    const weight = m.kind === "object" ? e.object * SECOND[Math.min(2, objectsSeen.count++)] : e[m.kind];
    vectors.addRow(out, vectors.concept[m.kind], m.concept, weight);
    vectors.addRow(out, vectors.word, vectors.lexicon.phraseId(m.kind, m.concept, m.register), weight * e.textSurface);
  }
  const chatty = (parsed.opener >= 0 ? 1 : 0) + (parsed.tail >= 0 ? 1 : 0);
  vectors.addRow(out, vectors.style, 0, e.textStyle * chatty);
  vectors.addRow(out, vectors.style, 1, e.textStyle * parsed.registerShare[2]);
  vectors.addRow(out, vectors.style, 2, e.textStyle * parsed.registerShare[0]);
}

export function normalise(v: Float64Array): void {
  let norm = 0;
  for (let k = 0; k < v.length; k++) norm += v[k] * v[k];
  const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let k = 0; k < v.length; k++) v[k] *= inv;
}
