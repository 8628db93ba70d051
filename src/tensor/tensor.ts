/**
 * A small row-major tensor with tape-free reverse-mode autograd (micrograd style): every op that
 * needs a gradient links its output to its inputs and a closure that pushes the output gradient
 * back. `backward()` walks that graph in reverse topological order. Data is always contiguous.
 */
export type DType = "float32" | "float64";
export type Data = Float32Array | Float64Array;

type BackwardFn = (grad: Data) => void;

const RELEASED: BackwardFn = () => {
  throw new Error(
    "backward(): this graph was already released by an earlier backward(); recompute it or pass { retainGraph: true }",
  );
};

let gradDepth = 0; // > 0 inside noGrad()
let visitStamp = 0; // marks nodes during the topological sort without a Set

/** Runs `fn` without recording any gradient graph (evaluation, reference policies, optimiser maths). */
export function noGrad<T>(fn: () => T): T {
  gradDepth++;
  try {
    return fn();
  } finally {
    gradDepth--;
  }
}

export function isGradEnabled(): boolean {
  return gradDepth === 0;
}

export function allocData(dtype: DType, n: number): Data {
  return dtype === "float64" ? new Float64Array(n) : new Float32Array(n);
}

export function dtypeOf(data: Data): DType {
  return data instanceof Float64Array ? "float64" : "float32";
}

export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

function checkShape(shape: readonly number[], length: number, what: string): void {
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0)
      throw new RangeError(`${what}: bad dimension ${d} in shape ${formatShape(shape)}`);
  }
  if (shapeSize(shape) !== length)
    throw new RangeError(`${what}: shape ${formatShape(shape)} needs ${shapeSize(shape)} values, got ${length}`);
}

export class Tensor {
  readonly shape: number[];
  readonly data: Data;
  readonly dtype: DType;
  /** Gradient of the last backward() root w.r.t. this tensor; accumulated on leaves, freed on intermediates. */
  grad: Data | null = null;
  requiresGrad: boolean;
  /** Inputs of the op that produced this tensor (null for leaves and for outputs that need no grad). */
  parents: Tensor[] | null = null;
  /**
   * @internal Set on zero-copy views (reshape, contiguous `narrow`): returns the matching slice of the base's
   * gradient buffer, so consumers accumulate straight into the base and the view's backward is a no-op.
   */
  gradSlice: (() => Data) | null = null;
  private backwardFn: BackwardFn | null = null;
  private stamp = 0;

  constructor(data: Data, shape: readonly number[], requiresGrad = false) {
    checkShape(shape, data.length, "Tensor");
    this.data = data;
    this.shape = shape.slice();
    this.dtype = dtypeOf(data);
    this.requiresGrad = requiresGrad;
  }

  get size(): number {
    return this.data.length;
  }

  get ndim(): number {
    return this.shape.length;
  }

  /** True when no op recorded this tensor (parameters, inputs, detached values). */
  get isLeaf(): boolean {
    return this.parents === null;
  }

  static zeros(shape: number[], dtype: DType = "float32"): Tensor {
    return new Tensor(allocData(dtype, shapeSize(shape)), shape);
  }

  static full(shape: number[], value: number, dtype: DType = "float32"): Tensor {
    const t = Tensor.zeros(shape, dtype);
    t.data.fill(value);
    return t;
  }

  /**
   * Wraps `data` (no copy) when it is already a typed array of the requested dtype; copies otherwise.
   * The default dtype is the typed array's own, or float32 for plain arrays.
   */
  static from(data: ArrayLike<number> | Data, shape: number[], dtype?: DType): Tensor {
    const isTyped = data instanceof Float32Array || data instanceof Float64Array;
    const want: DType = dtype ?? (isTyped ? dtypeOf(data as Data) : "float32");
    if (isTyped && dtypeOf(data as Data) === want) return new Tensor(data as Data, shape);
    const out = allocData(want, data.length);
    for (let i = 0; i < data.length; i++) out[i] = data[i];
    return new Tensor(out, shape);
  }

  static scalar(value: number, dtype: DType = "float32"): Tensor {
    return Tensor.from([value], [], dtype);
  }

  /** A trainable leaf (requiresGrad = true) wrapping `data` without copying. */
  static param(data: Data, shape: number[]): Tensor {
    return new Tensor(data, shape, true);
  }

  item(): number {
    if (this.size !== 1) throw new RangeError(`item(): tensor of shape ${formatShape(this.shape)} is not a scalar`);
    return this.data[0];
  }

  /** Same data, cut from the graph. */
  detach(): Tensor {
    return new Tensor(this.data, this.shape);
  }

  /** Plain nested-free copy of the values (tests, logging). */
  toArray(): number[] {
    return Array.from(this.data);
  }

  /** Records that this tensor was computed from `parents`; `fn` receives d(root)/d(this). Used by ops. */
  setGradFn(parents: Tensor[], fn: BackwardFn): void {
    this.requiresGrad = true;
    this.parents = parents;
    this.backwardFn = fn;
  }

  /**
   * Reverse-mode differentiation from this scalar: leaves with requiresGrad accumulate into `.grad`.
   * The graph is released afterwards unless `retainGraph` (then a second backward() accumulates again).
   */
  backward(options: { retainGraph?: boolean } = {}): void {
    if (this.size !== 1)
      throw new RangeError(`backward(): root must be a scalar, got shape ${formatShape(this.shape)}`);
    if (!this.requiresGrad) throw new Error("backward(): the root does not require grad (no parameter reaches it)");
    const order = topologicalOrder(this);
    // Through gradBuffer: a root that is a view seeds its base's buffer (gradSlice).
    gradBuffer(this)[0] += 1;
    for (let i = order.length - 1; i >= 0; i--) {
      const node = order[i];
      if (node.isLeaf) continue;
      const g = node.grad;
      node.grad = null; // intermediate gradients are not kept (PyTorch semantics)
      if (g !== null && node.backwardFn !== null) node.backwardFn(g);
      if (!options.retainGraph) {
        // Keep the node non-leaf so a later backward through it fails loudly instead of dropping gradients.
        node.parents = [];
        node.backwardFn = RELEASED;
      }
    }
  }

  /** @internal used by topologicalOrder */
  static markVisited(t: Tensor, stamp: number): boolean {
    if (t.stamp === stamp) return false;
    t.stamp = stamp;
    return true;
  }
}

/** Nodes reachable from `root` through grad-requiring links, parents before children. */
function topologicalOrder(root: Tensor): Tensor[] {
  const stamp = ++visitStamp;
  const order: Tensor[] = [];
  const stack: { node: Tensor; next: number }[] = [{ node: root, next: 0 }];
  Tensor.markVisited(root, stamp);
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const parents = top.node.parents;
    if (parents !== null && top.next < parents.length) {
      const p = parents[top.next++];
      if (p.requiresGrad && Tensor.markVisited(p, stamp)) stack.push({ node: p, next: 0 });
    } else {
      order.push(top.node);
      stack.pop();
    }
  }
  return order;
}

/** The gradient buffer of `t`, created (zeros) on first use. Backward closures accumulate into it. */
export function gradBuffer(t: Tensor): Data {
  if (t.grad === null) t.grad = t.gradSlice !== null ? t.gradSlice() : allocData(t.dtype, t.size);
  return t.grad;
}

/** Adds `g` into t.grad (allocating it on first use). */
export function accumulate(t: Tensor, g: Data): void {
  const buf = gradBuffer(t);
  for (let i = 0; i < buf.length; i++) buf[i] += g[i];
}

/** Whether an op over `inputs` must record its backward. */
export function needsGrad(...inputs: (Tensor | null | undefined)[]): boolean {
  if (gradDepth > 0) return false;
  for (const t of inputs) if (t?.requiresGrad) return true;
  return false;
}

/** Throws unless all tensors share one dtype; returns it. Ops never mix float32 and float64 silently. */
export function commonDtype(op: string, ...tensors: Tensor[]): DType {
  const dtype = tensors[0].dtype;
  for (const t of tensors) {
    if (t.dtype !== dtype) throw new TypeError(`${op}: dtype mismatch (${dtype} vs ${t.dtype})`);
  }
  return dtype;
}

/** Normalises a possibly negative axis for a tensor of `ndim` dimensions. */
export function normAxis(op: string, axis: number, ndim: number): number {
  const a = axis < 0 ? axis + ndim : axis;
  if (!Number.isInteger(a) || a < 0 || a >= ndim)
    throw new RangeError(`${op}: axis ${axis} out of range for ${ndim} dims`);
  return a;
}
