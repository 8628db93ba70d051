import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SelectorConfigSchema } from "../../src/selector/config.js";
import { PointerSelector, sequenceLogProbs, sftLoss } from "../../src/selector/model.js";
import { parameterCount } from "../../src/selector/params.js";
import * as T from "../../src/tensor/ops.js";
import { noGrad } from "../../src/tensor/tensor.js";

/** Produced by golden/make_torch_golden.py with PyTorch 1.13 (real nn.MultiheadAttention, LayerNorm, GRUCell, autograd). */
interface Golden {
  name: string;
  config: Record<string, unknown>;
  params: Record<string, number[]>;
  grads: Record<string, number[]>;
  query: number[][];
  cands: number[][][];
  labels: number[][];
  logProbs: number[][][];
  sequenceLogProb: number[];
  loss: number;
}

const cases = JSON.parse(readFileSync(new URL("./golden/torch-golden.json", import.meta.url), "utf8")) as Golden[];

describe.each(cases.map((c) => [c.name, c] as const))("parity with PyTorch golden values: %s", (_name, g) => {
  const config = SelectorConfigSchema.parse({ ...g.config, dropout: 0.5, attnDropout: 0.1 });
  const B = g.query.length;
  const K = g.cands[0].length;
  const S = g.labels[0].length;
  const input = {
    queries: new Float64Array(g.query.flat()),
    table: new Float64Array(g.cands.flat(2)),
    slots: Int32Array.from({ length: B * K }, (_, i) => i),
    K,
  };
  const labels = new Int32Array(g.labels.flat());
  const values = new Map(Object.entries(g.params).map(([k, v]) => [k, Float64Array.from(v)]));

  it("has exactly the PyTorch state-dict tensors", () => {
    expect(Object.keys(g.params).sort()).toEqual(
      new PointerSelector(config, values, "float64").specs.map((s) => s.name).sort(),
    );
    expect(parameterCount(config)).toBe(Object.values(g.params).reduce((n, v) => n + v.length, 0));
  });

  for (const dtype of ["float64", "float32"] as const) {
    const tol = dtype === "float64" ? 1e-10 : 2e-4;
    it(`reproduces log-probabilities, sequence log-probs, loss and parameter gradients in ${dtype}`, () => {
      const model = new PointerSelector(config, values, dtype);
      const tf = model.teacherForce(model.encode(input), 1, labels, S);
      const loss = sftLoss(tf, labels, new Float64Array(B).fill(1), 0);
      const seq = noGrad(() => sequenceLogProbs(tf, labels));
      for (let t = 0; t < S; t++) {
        const lp = noGrad(() => T.logSoftmax(tf.scores[t], tf.masks[t])).data;
        for (let b = 0; b < B; b++)
          for (let k = 0; k < K; k++) {
            const want = g.logProbs[b][t][k];
            // The reference fills chosen positions with −100: probability ≈ e^−100, ours exactly 0.
            if (tf.masks[t][b * K + k]) expect(want).toBeLessThan(-90);
            else expect(Math.abs(lp[b * K + k] - want)).toBeLessThan(tol);
          }
      }
      g.sequenceLogProb.forEach((v, b) => {
        expect(Math.abs(seq.data[b] - v)).toBeLessThan(tol * 10);
      });
      expect(Math.abs(loss.item() - g.loss)).toBeLessThan(tol);
      loss.backward();
      for (const [name, want] of Object.entries(g.grads)) {
        const got = model.params.get(name)!.grad!;
        want.forEach((v, i) => {
          expect(Math.abs(got[i] - v)).toBeLessThan(tol * Math.max(1, Math.abs(v)) * 10);
        });
      }
    });
  }
});
