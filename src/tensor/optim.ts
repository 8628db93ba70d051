/** AdamW (PyTorch semantics: decoupled weight decay, bias correction), the global gradient norm and its clipping. */
import { native } from "./native.js";
import type { Data, Tensor } from "./tensor.js";

export interface ParamGroup {
  params: Tensor[];
  lr: number;
  /** Decoupled weight decay (PyTorch AdamW default 0.01). */
  weightDecay?: number;
  /** A frozen group is never updated (its params keep their values and optimiser state). */
  frozen?: boolean;
}

export interface AdamWOptions {
  betas?: [number, number];
  eps?: number;
}

/**
 * Serializable optimiser state: per group its settings, per parameter (in group order) step, m and v
 * (copies, as typed arrays: a model with identity embeddings has millions of moments, and boxing them
 * into JS arrays every epoch cost more than the epoch's checkpoint writes).
 */
export interface AdamWState {
  betas: [number, number];
  eps: number;
  groups: {
    lr: number;
    weightDecay: number;
    frozen: boolean;
    params: { step: number; m: Float64Array; v: Float64Array }[];
  }[];
}

interface Slot {
  step: number;
  m: Float64Array;
  v: Float64Array;
}

export class AdamW {
  readonly groups: Required<ParamGroup>[];
  readonly betas: [number, number];
  readonly eps: number;
  private readonly slots: Slot[][];

  constructor(groups: ParamGroup[], opts: AdamWOptions = {}) {
    this.betas = opts.betas ?? [0.9, 0.999];
    this.eps = opts.eps ?? 1e-8;
    const [b1, b2] = this.betas;
    if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) throw new RangeError(`AdamW: betas ${this.betas} not in [0, 1)`);
    const seen = new Set<Tensor>();
    this.groups = groups.map((g, gi) => {
      if (!(g.lr >= 0)) throw new RangeError(`AdamW: group ${gi} has invalid lr ${g.lr}`);
      for (const p of g.params) {
        if (seen.has(p)) throw new RangeError(`AdamW: a parameter appears twice (group ${gi})`);
        seen.add(p);
      }
      return { params: g.params, lr: g.lr, weightDecay: g.weightDecay ?? 0.01, frozen: g.frozen ?? false };
    });
    this.slots = this.groups.map((g) =>
      g.params.map((p) => ({ step: 0, m: new Float64Array(p.size), v: new Float64Array(p.size) })),
    );
  }

  /** One update of every non-frozen parameter that has a gradient (parameters without .grad are skipped). */
  step(): void {
    const [b1, b2] = this.betas;
    this.groups.forEach((group, gi) => {
      if (group.frozen) return;
      const { lr, weightDecay } = group;
      group.params.forEach((p, pi) => {
        const grad = p.grad;
        if (grad === null) return;
        const slot = this.slots[gi][pi];
        slot.step++;
        const bc1 = 1 - b1 ** slot.step;
        const bc2 = 1 - b2 ** slot.step;
        const stepSize = lr / bc1;
        const sqrtBc2 = Math.sqrt(bc2);
        const decay = 1 - lr * weightDecay;
        const update = native.addon?.adamw ?? adamwKernel;
        update(p.data, grad, slot.m, slot.v, b1, b2, this.eps, decay, stepSize, 1 / sqrtBc2);
      });
    });
  }

  /**
   * Clears every parameter's gradient: to null by default (PyTorch set_to_none, so a parameter the
   * next loss does not reach is skipped by step()), or to zeros in place (reuses the buffers).
   */
  zeroGrad(setToNone = true): void {
    for (const g of this.groups) {
      for (const p of g.params) {
        if (setToNone) p.grad = null;
        else p.grad?.fill(0);
      }
    }
  }

  setLr(groupIndex: number, lr: number): void {
    if (!this.groups[groupIndex]) throw new RangeError(`AdamW.setLr: no group ${groupIndex}`);
    if (!(lr >= 0)) throw new RangeError(`AdamW.setLr: invalid lr ${lr}`);
    this.groups[groupIndex].lr = lr;
  }

  stateDict(): AdamWState {
    return {
      betas: [...this.betas],
      eps: this.eps,
      groups: this.groups.map((g, gi) => ({
        lr: g.lr,
        weightDecay: g.weightDecay,
        frozen: g.frozen,
        params: this.slots[gi].map((s) => ({ step: s.step, m: s.m.slice(), v: s.v.slice() })),
      })),
    };
  }

  /** Restores a stateDict() taken from an optimiser over the same parameter layout (checked). */
  loadStateDict(state: AdamWState): void {
    if (state.groups.length !== this.groups.length)
      throw new RangeError(`AdamW.loadStateDict: ${state.groups.length} groups, expected ${this.groups.length}`);
    state.groups.forEach((g, gi) => {
      const slots = this.slots[gi];
      if (g.params.length !== slots.length)
        throw new RangeError(
          `AdamW.loadStateDict: group ${gi} has ${g.params.length} params, expected ${slots.length}`,
        );
      g.params.forEach((p, pi) => {
        if (p.m.length !== slots[pi].m.length || p.v.length !== slots[pi].v.length)
          throw new RangeError(`AdamW.loadStateDict: group ${gi} param ${pi} has the wrong size`);
      });
    });
    state.groups.forEach((g, gi) => {
      Object.assign(this.groups[gi], { lr: g.lr, weightDecay: g.weightDecay, frozen: g.frozen });
      g.params.forEach((p, pi) => {
        const slot = this.slots[gi][pi];
        slot.step = p.step;
        slot.m.set(p.m);
        slot.v.set(p.v);
      });
    });
  }
}

/** The per-element AdamW update (TypeScript twin of the native `adamw`; same operations, same order). */
export function adamwKernel(
  w: Data,
  g: Data,
  m: Float64Array,
  v: Float64Array,
  b1: number,
  b2: number,
  eps: number,
  decay: number,
  stepSize: number,
  invSqrtBc2: number,
): void {
  const c1 = 1 - b1;
  const c2 = 1 - b2;
  const n = w.length;
  for (let i = 0; i < n; i++) {
    const gi = g[i];
    const mi = b1 * m[i] + c1 * gi;
    const vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] * decay - (stepSize * mi) / (Math.sqrt(vi) * invSqrtBc2 + eps);
  }
}

/**
 * Global L2 norm of the parameters' gradients (params without a gradient count as zero), as
 * torch.nn.utils.clip_grad_norm_ computes it; Σ x² runs natively when the addon loaded.
 */
export function gradNorm(params: readonly Tensor[]): number {
  const addon = native.addon;
  let sq = 0;
  for (const p of params) {
    const g = p.grad;
    if (g === null) continue;
    sq += addon ? addon.sumSquares(g) : sumSquares(g);
  }
  return Math.sqrt(sq);
}

/**
 * torch.nn.utils.clip_grad_norm_: scales all gradients by maxNorm / (total + 1e-6) when the global
 * L2 norm (gradNorm) exceeds maxNorm. Returns the norm before clipping (NaN/∞ are returned, grads left as is).
 */
export function clipGradNorm(params: readonly Tensor[], maxNorm: number): number {
  const total = gradNorm(params);
  const coef = maxNorm / (total + 1e-6);
  if (coef < 1) {
    const addon = native.addon;
    for (const p of params) {
      const g = p.grad;
      if (g === null) continue;
      if (addon) addon.scaleInPlace(g, coef);
      else for (let i = 0; i < g.length; i++) g[i] *= coef;
    }
  }
  return total;
}

/** Σ x² with the same four partial sums as the native sumSquares (identical results). */
export function sumSquares(x: Data): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i + 4 <= x.length; i += 4) {
    s0 += x[i] * x[i];
    s1 += x[i + 1] * x[i + 1];
    s2 += x[i + 2] * x[i + 2];
    s3 += x[i + 3] * x[i + 3];
  }
  for (; i < x.length; i++) s0 += x[i] * x[i];
  return s0 + s1 + (s2 + s3);
}
