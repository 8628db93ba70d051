/** Parameter initialisers matching torch.nn.init, drawing from a seeded Rng. */
import type { Rng } from "../util/rng.js";
import { allocData, type DType, shapeSize, Tensor } from "./tensor.js";

/** Trainable tensor with values U(lo, hi). */
export function uniformParam(shape: number[], lo: number, hi: number, rng: Rng, dtype: DType = "float32"): Tensor {
  const data = allocData(dtype, shapeSize(shape));
  for (let i = 0; i < data.length; i++) data[i] = lo + (hi - lo) * rng.next();
  return Tensor.param(data, shape);
}

/** Trainable tensor with values N(mean, std²). */
export function normalParam(shape: number[], std: number, rng: Rng, mean = 0, dtype: DType = "float32"): Tensor {
  const data = allocData(dtype, shapeSize(shape));
  for (let i = 0; i < data.length; i++) data[i] = mean + std * rng.normal();
  return Tensor.param(data, shape);
}

/** nn.init.xavier_uniform_ for a [fanOut, fanIn] weight: U(±gain·√(6/(fanIn + fanOut))). */
export function xavierUniformParam(shape: [number, number], rng: Rng, gain = 1, dtype: DType = "float32"): Tensor {
  const [fanOut, fanIn] = shape;
  const bound = gain * Math.sqrt(6 / (fanIn + fanOut));
  return uniformParam(shape, -bound, bound, rng, dtype);
}

/** nn.Linear's default init (kaiming_uniform with a = √5, and the bias rule): U(±1/√fanIn). */
export function linearDefaultParam(shape: number[], fanIn: number, rng: Rng, dtype: DType = "float32"): Tensor {
  const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
  return uniformParam(shape, -bound, bound, rng, dtype);
}
