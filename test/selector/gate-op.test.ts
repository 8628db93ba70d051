import { describe, expect, it } from "vitest";
import { gateForwardTypeScript, gateUpdate } from "../../src/selector/gate-op.js";
import { native } from "../../src/tensor/native.js";
import { Tensor } from "../../src/tensor/tensor.js";
import { Rng } from "../../src/util/rng.js";

function operands(Arr: typeof Float32Array | typeof Float64Array, rows: number, H: number, seed: number) {
  const rng = new Rng(seed);
  return Array.from({ length: 4 }, () => Arr.from(Array.from({ length: rows * H }, () => rng.normal() * 2)));
}

describe("gateUpdate", () => {
  it("computes normalise(ĉ + σ(a + b)⊙(h − ĉ)) as a hand-computed row", () => {
    // a + b = 0 → g = ½: y = (h + c)/2 = [1, 1] / 1 → [1/√2, 1/√2].
    const t = (v: number[]) => Tensor.from(Float64Array.from(v), [1, 2]);
    const out = gateUpdate(t([0.3, -1]), t([-0.3, 1]), t([2, 0]), t([0, 2]));
    expect(out.toArray()[0]).toBeCloseTo(Math.SQRT1_2, 14);
    expect(out.toArray()[1]).toBeCloseTo(Math.SQRT1_2, 14);
  });

  it.skipIf(native.addon === null)(
    "native gateForward matches the TypeScript loop to rounding for float32 and float64",
    () => {
      const addon = native.addon;
      if (addon === null) return;
      for (const Arr of [Float32Array, Float64Array]) {
        const rows = 5;
        const H = 37; // not a multiple of any vector width
        const [a, b, h, c] = operands(Arr, rows, H, 3);
        const run = (useNative: boolean) => {
          const out = new Arr(rows * H);
          const g = new Float64Array(rows * H);
          const y = new Float64Array(rows * H);
          const norms = new Float64Array(rows);
          if (useNative) addon.gateForward(a, b, h, c, H, out, g, y, norms);
          else gateForwardTypeScript(a, b, h, c, H, out, g, y, norms);
          return { out, g, y, norms };
        };
        const want = run(false);
        const got = run(true);
        const tol = Arr === Float32Array ? 1e-6 : 1e-14;
        for (const key of ["out", "g", "y", "norms"] as const)
          for (let i = 0; i < want[key].length; i++) {
            const v = want[key][i];
            expect(Math.abs(got[key][i] - v)).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(v)));
          }
      }
    },
  );

  it.skipIf(native.addon === null)("native gateForward rejects mismatched lengths with a clear error", () => {
    const x = new Float32Array(6);
    const f64 = new Float64Array(6);
    expect(() => native.addon?.gateForward(x, x, x, new Float32Array(5), 3, x, f64, f64, new Float64Array(2))).toThrow(
      /share dtype and length/,
    );
    expect(() => native.addon?.gateForward(x, x, x, x, 4, x, f64, f64, new Float64Array(2))).toThrow(/do not match H/);
  });
});
