/** The numeric engine: tensors with reverse-mode autograd, ops, GEMM kernels, AdamW. */
export * from "./init.js";
export { dgemm, gemm, gemmData, gemmTypeScript, type KernelPath, kernelPath } from "./kernels.js";
export { type NativeInfo, native } from "./native.js";
export * from "./ops.js";
export { AdamW, type AdamWOptions, type AdamWState, clipGradNorm, gradNorm, type ParamGroup } from "./optim.js";
export { type Data, type DType, isGradEnabled, noGrad, Tensor } from "./tensor.js";
