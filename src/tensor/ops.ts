/** Every differentiable op, in one namespace (`import * as T from "../tensor/ops.js"`). */
export {
  abs,
  add,
  addScalar,
  broadcastTo,
  clamp,
  div,
  exp,
  log,
  maximum,
  minimum,
  mul,
  neg,
  relu,
  scale,
  sigmoid,
  softplus,
  sqrt,
  square,
  sub,
  tanh,
} from "./elementwise.js";
export { linear, linearColumns, type MatmulOptions, matmul } from "./linalg.js";
export { type CrossEntropyOptions, crossEntropy } from "./loss.js";
export { dropout, gruCell, l2Normalize, layerNorm, logSoftmax, maskedFill, softmax } from "./nn.js";
export { argmax, mean, sum } from "./reduce.js";
export { concat, gatherLast, indexSelect, narrow, permute, reshape, stack, transpose } from "./shape.js";
