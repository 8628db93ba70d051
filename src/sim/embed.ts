import { Rng } from "../util/rng.js";
import type { Split, World } from "./world.js";

export interface SplitEmbeddings {
  /** Question ids of the rows, in row order (the split's item order). */
  ids: string[];
  dim: number;
  /** Row-major [ids.length, dim] float32 matrices, rows L2-normalised. */
  image: Float32Array;
  text: Float32Array;
  joint: Float32Array;
}

/** The embeddings of one split. Deterministic: latent vectors and noise come from named Rng children. */
export function splitEmbeddings(world: World, split: Split): SplitEmbeddings {
  const p = world.params.embedding;
  const dim = p.dim;
  const rng = new Rng(world.params.seed).child("embeddings");
  const scale = 1 / Math.sqrt(dim);
  const gaussian = (r: Rng, rows: number) => {
    const out = new Float64Array(rows * dim);
    for (let i = 0; i < out.length; i++) out[i] = r.normal() * scale;
    return out;
  };
  const conceptVectors = gaussian(rng.child("concepts"), world.params.concepts);
  const typeVectors = gaussian(rng.child("types"), world.questionTypeCount);
  const answerVectors = gaussian(rng.child("answers"), world.registry.size);
  const imageNoise = rng.child(`image-noise:${split}`);
  const textNoise = rng.child(`text-noise:${split}`);

  const items = world.itemsOf(split);
  const n = items.length;
  const image = new Float32Array(n * dim);
  const text = new Float32Array(n * dim);
  const joint = new Float32Array(n * dim);
  const imageVec = new Float64Array(dim);
  const textVec = new Float64Array(dim);
  let row = 0;
  for (const img of world.imagesOf(split)) {
    const c = img.concept;
    for (let k = 0; k < dim; k++)
      imageVec[k] = p.imageConcept * conceptVectors[c * dim + k] + p.imageNoise * imageNoise.normal() * scale;
    for (let i = img.firstItem; i < img.firstItem + img.count; i++) {
      const a = world.trueAnswer[i];
      for (let k = 0; k < dim; k++) imageVec[k] += (p.imageAnswer / img.count) * answerVectors[a * dim + k];
    }
    normalise(imageVec);
    for (let i = img.firstItem; i < img.firstItem + img.count; i++, row++) {
      const t = world.qtype[i];
      for (let k = 0; k < dim; k++)
        textVec[k] =
          p.textType * typeVectors[t * dim + k] +
          p.textConcept * conceptVectors[c * dim + k] +
          p.textNoise * textNoise.normal() * scale;
      normalise(textVec);
      const off = row * dim;
      let norm = 0;
      for (let k = 0; k < dim; k++) norm += (imageVec[k] + textVec[k]) ** 2;
      const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
      for (let k = 0; k < dim; k++) {
        image[off + k] = imageVec[k];
        text[off + k] = textVec[k];
        joint[off + k] = (imageVec[k] + textVec[k]) * inv;
      }
    }
  }
  if (p.shared !== undefined && p.shared > 0) {
    const u = gaussian(rng.child("shared"), 1);
    normalise(u);
    for (const m of [image, text, joint]) shareDirection(m, dim, u, p.shared);
  }
  return { ids: items.map((i) => world.questionIds[i]), dim, image, text, joint };
}

/** Every row v of a row-major matrix ← normalise(v + s·u) (`embedding.shared`). */
function shareDirection(m: Float32Array, dim: number, u: Float64Array, s: number): void {
  const v = new Float64Array(dim);
  for (let off = 0; off < m.length; off += dim) {
    for (let k = 0; k < dim; k++) v[k] = m[off + k] + s * u[k];
    normalise(v);
    for (let k = 0; k < dim; k++) m[off + k] = v[k];
  }
}

function normalise(v: Float64Array): void {
  let norm = 0;
  for (let k = 0; k < v.length; k++) norm += v[k] * v[k];
  const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let k = 0; k < v.length; k++) v[k] *= inv;
}
