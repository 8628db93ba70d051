/**
 * Resumable training state, written atomically after every epoch: the exact weights (in the
 * model's dtype), AdamW moments, the step counter, early-stopping state and the metric history.
 * Because epoch e draws only from Rng(seed).child(`epoch-${e}`), continuing from this state gives
 * the same weights as an uninterrupted run.
 */
import { readSafetensors, writeSafetensors } from "../../data/safetensors.js";
import type { ParamValues } from "../../selector/params.js";
import type { AdamWState } from "../../tensor/optim.js";
import { LeverError } from "../../util/errors.js";

export const STATE_FORMAT = "lever.train-state/1";

/** An objective's resumable state: JSON plus named float arrays (saved as tensors). */
export interface ObjectiveState {
  json: unknown;
  arrays: Map<string, Float64Array>;
}

export interface LoopState {
  /** First epoch still to run. */
  nextEpoch: number;
  /** Optimiser steps taken so far. */
  step: number;
  history: Record<string, number>[];
  stopper: { best: number | null; bestEpoch: number; sinceBest: number };
  optimizer: AdamWState;
}

export interface SavedState {
  loop: LoopState;
  /** The objective's own state (an RL objective's KL coefficient and behaviour snapshot). */
  objective?: ObjectiveState;
  params: ParamValues;
  dtype: "float32" | "float64";
}

export function saveTrainState(path: string, state: SavedState, paramOrder: readonly string[]): void {
  const tensors: Record<string, { dtype: "F32" | "F64"; shape: number[]; data: Float32Array | Float64Array }> = {};
  for (const name of paramOrder) {
    const v = state.params.get(name)!;
    tensors[`param.${name}`] =
      state.dtype === "float32"
        ? { dtype: "F32", shape: [v.length], data: Float32Array.from(v) }
        : { dtype: "F64", shape: [v.length], data: v };
  }
  const { optimizer, ...loop } = state.loop;
  const groups = optimizer.groups.map((g, gi) => ({
    lr: g.lr,
    weightDecay: g.weightDecay,
    frozen: g.frozen,
    steps: g.params.map((p, pi) => {
      tensors[`adam.${gi}.${pi}.m`] = { dtype: "F64", shape: [p.m.length], data: p.m };
      tensors[`adam.${gi}.${pi}.v`] = { dtype: "F64", shape: [p.v.length], data: p.v };
      return p.step;
    }),
  }));
  const objectiveArrays = [...(state.objective?.arrays ?? new Map<string, Float64Array>())];
  for (const [name, data] of objectiveArrays)
    tensors[`objective.${name}`] = { dtype: "F64", shape: [data.length], data };
  writeSafetensors(path, tensors, {
    format: STATE_FORMAT,
    dtype: state.dtype,
    params: JSON.stringify(paramOrder),
    loop: JSON.stringify(loop),
    adam: JSON.stringify({ betas: optimizer.betas, eps: optimizer.eps, groups }),
    ...(state.objective !== undefined
      ? {
          objective: JSON.stringify({
            json: state.objective.json ?? null,
            arrays: objectiveArrays.map(([name]) => name),
          }),
        }
      : {}),
  });
}

export function loadTrainState(path: string): SavedState {
  const file = readSafetensors(path);
  const meta = file.metadata;
  if (meta.format !== STATE_FORMAT)
    throw new LeverError(`not a training state (format "${meta.format}")`, { file: path });
  const get = (name: string) => {
    const t = file.tensors.get(name);
    if (!t) throw new LeverError(`missing tensor ${name}`, { file: path });
    return t.data as Float32Array | Float64Array;
  };
  try {
    const order = JSON.parse(meta.params) as string[];
    const params: ParamValues = new Map(order.map((name) => [name, Float64Array.from(get(`param.${name}`))]));
    const loop = JSON.parse(meta.loop) as Omit<LoopState, "optimizer">;
    const adam = JSON.parse(meta.adam) as {
      betas: [number, number];
      eps: number;
      groups: { lr: number; weightDecay: number; frozen: boolean; steps: number[] }[];
    };
    const optimizer: AdamWState = {
      betas: adam.betas,
      eps: adam.eps,
      groups: adam.groups.map((g, gi) => ({
        lr: g.lr,
        weightDecay: g.weightDecay,
        frozen: g.frozen,
        params: g.steps.map((step, pi) => ({
          step,
          m: Float64Array.from(get(`adam.${gi}.${pi}.m`)),
          v: Float64Array.from(get(`adam.${gi}.${pi}.v`)),
        })),
      })),
    };
    let objective: ObjectiveState | undefined;
    if (meta.objective !== undefined) {
      const o = JSON.parse(meta.objective) as { json: unknown; arrays: string[] };
      objective = {
        json: o.json,
        arrays: new Map(o.arrays.map((name) => [name, Float64Array.from(get(`objective.${name}`))])),
      };
    }
    return {
      loop: { ...loop, optimizer },
      ...(objective !== undefined ? { objective } : {}),
      params,
      dtype: meta.dtype === "float64" ? "float64" : "float32",
    };
  } catch (error) {
    if (error instanceof LeverError) throw error;
    throw new LeverError(`corrupt training state: ${(error as Error).message}`, { file: path });
  }
}
