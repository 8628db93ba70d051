/**
 * Issue 23, point 2: what a selector reads about its candidates must mean the same on an index whose
 * cosines are compressed, spread or shifted. Embedding models differ mostly by a direction every
 * embedding shares (CLIP's cosines live in [0.5, 1]); here every row x (with no component along e)
 * becomes normalise(x + s·e), which maps every cosine c to (c + s²)/(1 + s²) exactly — a monotone
 * (affine) compression and shift. Top-k retrieval is unchanged by it. A selector with the training
 * defaults (cosine prior on embeddings centred on the index mean, vote feature at a rank scale) makes the
 * same picks after it — it loses nothing, as top-k — and so does the rank prior (invariant to every
 * monotone change of the cosines); one with the earlier options (cosine prior on raw embeddings, linear
 * vote weights) changes its picks: the test can fail.
 */
import { describe, expect, it } from "vitest";
import type { VqaItem } from "../../src/data/item.js";
import { candidateData } from "../../src/icl/candidate-data.js";
import { ModelOptionsSchema, SelectorConfigSchema } from "../../src/selector/config.js";
import { predict } from "../../src/selector/decode.js";
import { selectorInputOf, selectorSources } from "../../src/selector/inputs.js";
import { PointerSelector } from "../../src/selector/model.js";
import { initParams } from "../../src/selector/params.js";
import { Rng } from "../../src/util/rng.js";

const d = 12;
const N = 240;
const Q = 40;
const K = 16;
const rng = new Rng(7);

/** Unit rows with the last coordinate 0 (the free direction e the transform uses). */
function rows(n: number): Float32Array {
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    let norm = 0;
    for (let k = 0; k < d - 1; k++) {
      out[i * d + k] = rng.normal() + (k === 0 ? 0.8 : 0); // a shared offset, as real embeddings have
      norm += out[i * d + k] ** 2;
    }
    for (let k = 0; k < d - 1; k++) out[i * d + k] /= Math.sqrt(norm);
  }
  return out;
}

/** normalise(x + s·e) of every row (e = the last axis): cos' = (cos + s²)/(1 + s²). */
function squeeze(m: Float32Array, s: number): Float32Array {
  const out = Float32Array.from(m);
  const norm = Math.sqrt(1 + s * s);
  for (let i = 0; i < m.length / d; i++) {
    for (let k = 0; k < d - 1; k++) out[i * d + k] /= norm;
    out[i * d + d - 1] = s / norm;
  }
  return out;
}

const answers = ["red", "blue", "two", "yes", "no", "cat"];
const items: VqaItem[] = Array.from({ length: N }, (_, i) => {
  const shown = answers[rng.int(answers.length)];
  return {
    questionId: `i${String(i).padStart(3, "0")}`,
    imageId: `img${i}`,
    question: "?",
    answers: Array.from({ length: 10 }, () => ({
      answer: rng.next() < 0.7 ? shown : answers[rng.int(answers.length)],
    })),
    answer: shown,
    questionType: "",
    answerType: "other",
    imagePath: null,
  };
});
const indexIds = items.map((i) => i.questionId);
const queryIds = Array.from({ length: Q }, (_, q) => `q${q}`);
const indexRows = rows(N);
const queryRows = rows(Q);
// Pools of K, and some shorter ones: the batch is padded, and `predict` decodes it in chunks of 7 below.
const pools = queryIds.map((_, q) => rng.sampleWithoutReplacement(N, q % 5 === 0 ? K - 5 : K).map((r) => indexIds[r]));

function picks(options: Record<string, unknown>, s: number): number[][] {
  const model = ModelOptionsSchema.parse({ hidden: 12, dropout: 0, attnDropout: 0, ...options });
  const config = SelectorConfigSchema.parse({ ...model, d, shots: 3, voteScale: model.voteScale ?? 4 });
  const params = initParams(config, 3);
  // Trained weights are not zero: give the feature score weights and projection values (the same every call).
  const weights = new Rng(11);
  for (const name of ["feature_weight", "feature_proj.weight"]) {
    const p = params.get(name);
    if (p !== undefined) for (let i = 0; i < p.length; i++) p[i] = 0.5 * weights.normal();
  }
  const selector = new PointerSelector(config, params, "float64");
  const index = { ids: indexIds, dim: d, data: squeeze(indexRows, s) };
  const query = { ids: queryIds, dim: d, data: squeeze(queryRows, s) };
  const weighting =
    config.voteScale > 0 ? ({ kind: "rank", scale: config.voteScale } as const) : ({ kind: "linear" } as const);
  const sources = selectorSources(query, index, candidateData("train", index, items, weighting), {
    center: config.center === "index-mean",
  });
  const input = selectorInputOf(
    sources,
    queryIds.map((queryId, q) => ({ queryId, poolIds: pools[q] })),
    "float64",
  );
  return predict(selector, input, { shots: 3, chunk: 7 }).map((t) => t.positions);
}

/** Top-k within each pool by cosine: the baseline the transform must not move. */
function topk(s: number): number[][] {
  const index = squeeze(indexRows, s);
  const query = squeeze(queryRows, s);
  return pools.map((pool, q) => {
    const cos = pool.map((id) => {
      const r = indexIds.indexOf(id);
      let dot = 0;
      for (let k = 0; k < d; k++) dot += query[q * d + k] * index[r * d + k];
      return dot;
    });
    return cos
      .map((c, k) => [c, k])
      .sort((a, b) => b[0] - a[0] || a[1] - b[1])
      .slice(0, 3)
      .map(([, k]) => k);
  });
}

describe("candidate inputs under a monotone change of every cosine", () => {
  it("the transform compresses and shifts the cosines (c → (c + s²)/(1 + s²)) and leaves top-k as it is", () => {
    const a = squeeze(indexRows, 0);
    const b = squeeze(indexRows, 2);
    let c0 = 0;
    let c2 = 0;
    for (let k = 0; k < d; k++) {
      c0 += a[k] * a[d + k];
      c2 += b[k] * b[d + k];
    }
    expect(c2).toBeCloseTo((c0 + 4) / 5, 6);
    expect(topk(2)).toEqual(topk(0));
  });

  it("the training defaults make the same picks after it (no loss, like top-k); the earlier options do not", () => {
    for (const options of [{}, { prior: "rank" }])
      for (const s of [0.5, 2, 5])
        expect(picks(options, s), `${JSON.stringify(options)}, s = ${s}`).toEqual(picks(options, 0));
    const earlier = { prior: "cosine", center: "none", voteScale: 0 };
    const changed = [0.5, 2, 5].filter((s) => JSON.stringify(picks(earlier, s)) !== JSON.stringify(picks(earlier, 0)));
    expect(changed.length).toBeGreaterThan(0);
  });
});
