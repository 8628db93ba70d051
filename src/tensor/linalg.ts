/** Matrix products on top of the GEMM kernels: matmul (2-D, batched, broadcast) and linear. */
import { gemmData } from "./kernels.js";
import { allocData, commonDtype, type Data, formatShape, gradBuffer, needsGrad, shapeSize, Tensor } from "./tensor.js";

export interface MatmulOptions {
  /** Use aᵀ: a holds [..., K, M]. */
  transA?: boolean;
  /** Use bᵀ: b holds [..., N, K]. */
  transB?: boolean;
}

/**
 * op(a)·op(b) over the last two dimensions. a: [..., M, K]; b: [..., K, N] with the same leading
 * (batch) dimensions, or a plain 2-D matrix shared by every batch (either side may be the 2-D one).
 */
export function matmul(a: Tensor, b: Tensor, opts: MatmulOptions = {}): Tensor {
  const transA = opts.transA ?? false;
  const transB = opts.transB ?? false;
  const dtype = commonDtype("matmul", a, b);
  if (a.ndim < 2 || b.ndim < 2)
    throw new RangeError(`matmul: needs ≥2-D operands, got ${formatShape(a.shape)} and ${formatShape(b.shape)}`);
  const [aR, aC] = a.shape.slice(-2);
  const [bR, bC] = b.shape.slice(-2);
  const [M, K] = transA ? [aC, aR] : [aR, aC];
  const [K2, N] = transB ? [bC, bR] : [bR, bC];
  const batchA = a.shape.slice(0, -2);
  const batchB = b.shape.slice(0, -2);
  const sharedA = batchA.length === 0 && batchB.length > 0;
  const sharedB = batchB.length === 0;
  const batchShape = sharedB ? batchA : batchB;
  if (K !== K2 || (!sharedA && !sharedB && formatShape(batchA) !== formatShape(batchB)))
    throw new RangeError(
      `matmul: shapes ${formatShape(a.shape)}${transA ? "ᵀ" : ""} and ${formatShape(b.shape)}${transB ? "ᵀ" : ""} do not match`,
    );
  const batch = shapeSize(batchShape);
  const out = allocData(dtype, batch * M * N);
  const lda = transA ? M : K;
  const ldb = transB ? K : N;
  const sizeA = M * K;
  const sizeB = K * N;
  const sizeC = M * N;
  // A 2-D right operand with an untransposed left one: fold the batch into M (one big GEMM).
  const fold = sharedB && !transA;
  if (fold) gemmData(false, transB, batch * M, N, K, 1, a.data, K, b.data, ldb, 0, out, N);
  else {
    for (let i = 0; i < batch; i++) {
      gemmData(
        transA,
        transB,
        M,
        N,
        K,
        1,
        view(a.data, sharedA ? 0 : i * sizeA, sizeA),
        lda,
        view(b.data, sharedB ? 0 : i * sizeB, sizeB),
        ldb,
        0,
        view(out, i * sizeC, sizeC),
        N,
      );
    }
  }
  const result = new Tensor(out, [...batchShape, M, N]);
  if (!needsGrad(a, b)) return result;
  result.setGradFn([a, b], (g) => {
    if (fold) {
      const rows = batch * M;
      if (a.requiresGrad) gemmData(false, !transB, rows, K, N, 1, g, N, b.data, ldb, 1, gradBuffer(a), K);
      if (b.requiresGrad) {
        if (transB) gemmData(true, false, N, K, rows, 1, g, N, a.data, K, 1, gradBuffer(b), K);
        else gemmData(true, false, K, N, rows, 1, a.data, K, g, N, 1, gradBuffer(b), N);
      }
      return;
    }
    const ga = a.requiresGrad ? gradBuffer(a) : null;
    const gb = b.requiresGrad ? gradBuffer(b) : null;
    for (let i = 0; i < batch; i++) {
      const gi = view(g, i * sizeC, sizeC);
      const ai = view(a.data, sharedA ? 0 : i * sizeA, sizeA);
      const bi = view(b.data, sharedB ? 0 : i * sizeB, sizeB);
      if (ga) {
        const gai = view(ga, sharedA ? 0 : i * sizeA, sizeA);
        // d op(A) = G·op(B)ᵀ; stored Aᵀ gets its transpose op(B)·Gᵀ.
        if (transA) gemmData(transB, true, K, M, N, 1, bi, ldb, gi, N, 1, gai, M);
        else gemmData(false, !transB, M, K, N, 1, gi, N, bi, ldb, 1, gai, K);
      }
      if (gb) {
        const gbi = view(gb, sharedB ? 0 : i * sizeB, sizeB);
        // d op(B) = op(A)ᵀ·G; stored Bᵀ gets Gᵀ·op(A).
        if (transB) gemmData(true, transA, N, K, M, 1, gi, N, ai, lda, 1, gbi, K);
        else gemmData(!transA, false, K, N, M, 1, ai, lda, gi, N, 1, gbi, N);
      }
    }
  });
  return result;
}

function view(data: Data, offset: number, length: number): Data {
  return offset === 0 && length === data.length ? data : data.subarray(offset, offset + length);
}

/** PyTorch nn.Linear: x[..., in] · weightᵀ + bias, weight [out, in], bias [out]. */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  if (weight.ndim !== 2) throw new RangeError(`linear: weight must be [out, in], got ${formatShape(weight.shape)}`);
  return linearColumns(x, weight, 0, weight.shape[1], bias);
}

/**
 * nn.Linear with the column block weight[:, start:start + length] (x[..., length]), read in place
 * through the GEMM's leading dimension: no copy of the block and no scatter-add of its gradient
 * (e.g. the h and ĉ halves of the selector's gate weight).
 */
export function linearColumns(x: Tensor, weight: Tensor, start: number, length: number, bias?: Tensor | null): Tensor {
  const dtype = bias ? commonDtype("linear", x, weight, bias) : commonDtype("linear", x, weight);
  if (weight.ndim !== 2) throw new RangeError(`linear: weight must be [out, in], got ${formatShape(weight.shape)}`);
  const [outF, ldw] = weight.shape;
  const inF = length;
  if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 0 || start + length > ldw)
    throw new RangeError(
      `linear: columns [${start}, ${start + length}) out of range for weight ${formatShape(weight.shape)}`,
    );
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== inF)
    throw new RangeError(`linear: input ${formatShape(x.shape)} does not end in ${inF}`);
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== outF))
    throw new RangeError(`linear: bias ${formatShape(bias.shape)} is not [${outF}]`);
  const rows = inF === 0 ? shapeSize(x.shape.slice(0, -1)) : x.size / inF;
  const out = allocData(dtype, rows * outF);
  if (bias) for (let r = 0; r < rows; r++) out.set(bias.data, r * outF);
  const block = (data: Data) => (start === 0 ? data : data.subarray(start));
  gemmData(false, true, rows, outF, inF, 1, x.data, inF, block(weight.data), ldw, bias ? 1 : 0, out, outF);
  const result = new Tensor(out, [...x.shape.slice(0, -1), outF]);
  if (!needsGrad(x, weight, bias)) return result;
  result.setGradFn(bias ? [x, weight, bias] : [x, weight], (g) => {
    if (x.requiresGrad)
      gemmData(false, false, rows, inF, outF, 1, g, outF, block(weight.data), ldw, 1, gradBuffer(x), inF);
    if (weight.requiresGrad)
      gemmData(true, false, outF, inF, rows, 1, g, outF, x.data, inF, 1, block(gradBuffer(weight)), ldw);
    if (bias?.requiresGrad) sumRowsInto(g, rows, outF, gradBuffer(bias));
  });
  return result;
}

/** gb += Σ_r g[r, :] (a bias gradient). */
function sumRowsInto(g: Data, rows: number, cols: number, gb: Data): void {
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    for (let j = 0; j < cols; j++) gb[j] += g[o + j];
  }
}
