import type { EmbeddingMatrix } from "../../src/data/embeddings.js";
import type { VqaItem } from "../../src/data/item.js";
import { Rng } from "../../src/util/rng.js";

/** `images` images with `perImage` questions each; ids "<prefix><n>", image ids "<prefix>img<i>". */
export function makeItems(prefix: string, images: number, perImage: number): VqaItem[] {
  const items: VqaItem[] = [];
  for (let i = 0; i < images; i++)
    for (let j = 0; j < perImage; j++) {
      const n = i * perImage + j;
      items.push({
        questionId: `${prefix}${n}`,
        imageId: `${prefix}img${i}`,
        question: `question ${n}?`,
        answers: [{ answer: "yes" }],
        answer: "yes",
        questionType: "is the",
        answerType: "yes/no",
        imagePath: null,
      });
    }
  return items;
}

/** Gaussian rows (not normalised unless asked), ids = the items' question ids in order. */
export function makeEmbedding(
  items: readonly VqaItem[],
  dim: number,
  seed: number,
  normalise = false,
): EmbeddingMatrix {
  const rng = new Rng(seed);
  const data = new Float32Array(items.length * dim);
  for (let r = 0; r < items.length; r++) {
    let norm = 0;
    for (let c = 0; c < dim; c++) {
      const v = rng.normal();
      data[r * dim + c] = v;
      norm += v * v;
    }
    if (normalise) for (let c = 0; c < dim; c++) data[r * dim + c] /= Math.sqrt(norm);
  }
  return { ids: items.map((item) => item.questionId), dim, data };
}

/** Reference ranking: float64 cosine of every eligible row, sorted (score desc, row asc). */
export function bruteForceTopK(
  query: Float32Array,
  index: EmbeddingMatrix,
  k: number,
  excluded: ReadonlySet<number>,
): number[] {
  const { dim, data } = index;
  const qNorm = Math.hypot(...query);
  const scored: { row: number; score: number }[] = [];
  for (let r = 0; r < index.ids.length; r++) {
    if (excluded.has(r)) continue;
    let dot = 0;
    let norm = 0;
    for (let c = 0; c < dim; c++) {
      dot += query[c] * data[r * dim + c];
      norm += data[r * dim + c] ** 2;
    }
    scored.push({ row: r, score: dot / (qNorm * Math.sqrt(norm)) });
  }
  scored.sort((a, b) => b.score - a.score || a.row - b.row);
  return scored.slice(0, k).map((s) => s.row);
}
