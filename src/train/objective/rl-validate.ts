/**
 * Validation of the RL stages on held-out queries, after every epoch (evaluation mode, no gradient):
 *   valRce            RCE loss at τ = 1 on raw rewards over all trajectories (what Lever-Plus logged,
 *                     docs/provenance.md#grpo);
 *   valGreedyReward   reward of the greedy trajectory, on the queries whose data holds that exact
 *                     ordered trajectory (`valGreedyCoverage` = their share);
 *   valTop1           share of queries whose greedy first pick is the best trajectory's first pick;
 *   selectionChange@s share of queries whose greedy choice at s shots differs from the starting
 *                     checkpoint's (greedy decoding is prefix-consistent, so shot s is the first s picks),
 *                     and `selectionChange` = the share that differ at any shot;
 *   valAccuracy@s     with an answerer (a VLM): the mean VQA accuracy of the greedy choice at s shots,
 *                     and `valAccuracy` their mean — the honest selection metric when a VLM is at hand;
 *                     `valAccuracyStart` is the starting checkpoint's, `valAccuracyGain` the difference.
 */

import { greedyDecode } from "../../selector/decode.js";
import { type SelectorSources, selectorInput } from "../../selector/inputs.js";
import type { PointerSelector } from "../../selector/model.js";
import { sequenceLogProbs } from "../../selector/model.js";
import { noGrad } from "../../tensor/tensor.js";
import type { RlGroup } from "../data/rl-groups.js";
import { buildBatch, chunk } from "../loop/batch.js";
import { rceValidationLoss } from "./rce.js";

/** VQA accuracy (or null on a failed call) of each query answered with the given demonstrations. */
export type Answerer = (queryIds: string[], selections: string[][]) => Promise<(number | null)[]>;

export interface RlValidationData {
  groups: readonly RlGroup[];
  sources: SelectorSources;
  shots: number;
  batchQueries: number;
  answerer?: Answerer;
}

/** Greedy positions (selection order) of every group, `shots` long. */
export function greedyPositions(model: PointerSelector, data: RlValidationData): number[][] {
  const out: number[][] = [];
  noGrad(() => {
    for (const part of chunk(data.groups, data.batchQueries)) {
      const input = selectorInput(part, data.sources, model.dtype);
      out.push(...greedyDecode(model, model.encode(input), data.shots).map((t) => t.positions));
    }
  });
  return out;
}

export class RlValidator {
  private readonly start: number[][];
  /** The starting checkpoint's valAccuracy metrics (answered once, on the first validation). */
  private startAccuracy: Record<string, number> | null = null;

  /** `startModel`: the starting checkpoint, whose greedy choices `selectionChange` compares with. */
  constructor(
    private readonly data: RlValidationData,
    startModel: PointerSelector,
  ) {
    this.start = data.groups.length > 0 ? greedyPositions(startModel, data) : [];
  }

  async validate(model: PointerSelector): Promise<Record<string, number>> {
    const { groups, shots } = this.data;
    if (groups.length === 0) return {};
    // Online training has no stored trajectories: only the greedy choices (and answers) are validated.
    const scoredGroups = groups.filter((g) => g.trajectories.length > 0);
    let rceSum = 0;
    noGrad(() => {
      for (const part of chunk(scoredGroups, this.data.batchQueries)) {
        const batch = buildBatch(part, this.data.sources, model.dtype);
        const tf = model.teacherForce(model.encode(batch.input), batch.G, batch.labels, batch.steps);
        const rewards = Array.from(batch.trajectoryOf, (t, r) =>
          t < 0 ? 0 : part[Math.floor(r / batch.G)].rewards[t],
        );
        rceSum += rceValidationLoss(sequenceLogProbs(tf, batch.labels), rewards, batch.real, batch.G) * part.length;
      }
    });
    const greedy = greedyPositions(model, this.data);
    let covered = 0;
    let rewardSum = 0;
    let top1 = 0;
    let changedAny = 0;
    const changed = new Array<number>(shots).fill(0);
    groups.forEach((g, q) => {
      const picks = greedy[q];
      const hit = g.trajectories.findIndex((t) => t.length === shots && t.every((p, i) => p === picks[i]));
      if (hit >= 0) {
        covered++;
        rewardSum += g.rewards[hit];
      }
      if (g.trajectories.length > 0 && picks[0] === g.trajectories[g.best][0]) top1++;
      let any = false;
      for (let s = 1; s <= shots; s++) {
        if (picks.slice(0, s).some((p, i) => p !== this.start[q][i])) {
          changed[s - 1]++;
          any = true;
        }
      }
      if (any) changedAny++;
    });
    const n = groups.length;
    const scored = scoredGroups.length;
    const metrics: Record<string, number> = {
      ...(scored > 0 ? { valRce: rceSum / scored, valGreedyCoverage: covered / scored, valTop1: top1 / scored } : {}),
      ...(covered > 0 ? { valGreedyReward: rewardSum / covered } : {}),
      selectionChange: changedAny / n,
    };
    changed.forEach((c, s) => {
      metrics[`selectionChange@${s + 1}`] = c / n;
    });
    if (this.data.answerer !== undefined) {
      const now = await this.accuracy(greedy);
      this.startAccuracy ??= await this.accuracy(this.start);
      Object.assign(metrics, now, {
        valAccuracyStart: this.startAccuracy.valAccuracy,
        valAccuracyGain: now.valAccuracy - this.startAccuracy.valAccuracy,
      });
    }
    return metrics;
  }

  private async accuracy(greedy: number[][]): Promise<Record<string, number>> {
    const { groups, shots, answerer } = this.data;
    const queryIds: string[] = [];
    const selections: string[][] = [];
    for (let s = 1; s <= shots; s++)
      groups.forEach((g, q) => {
        queryIds.push(g.queryId);
        selections.push(greedy[q].slice(0, s).map((p) => g.poolIds[p]));
      });
    const scores = await (answerer as Answerer)(queryIds, selections);
    const out: Record<string, number> = {};
    let sum = 0;
    for (let s = 1; s <= shots; s++) {
      const part = scores.slice((s - 1) * groups.length, s * groups.length).filter((v): v is number => v !== null);
      const acc = part.length > 0 ? part.reduce((a, v) => a + v, 0) / part.length : Number.NaN;
      out[`valAccuracy@${s}`] = acc;
      sum += acc;
    }
    out.valAccuracy = sum / shots;
    return out;
  }
}
