/**
 * Candidate trajectories for one query and its pool of K candidates, as ordered lists of pool
 * positions (selection order), proposed by:
 *  - the selector checkpoint, from ONE encoding of the query's pool (`model.encode`, the per-query
 *    work done once): greedy decoding, beam search of width w (ranks 0…w−1), and for every sampling
 *    temperature τ `samples` draws from softmax(scores / τ) over the still available positions;
 *  - similarity retrieval: the pool ranked by cosine similarity to the query (ties by pool
 *    position); variant r = 0, 1, … takes the window of ranks r … r+S−1, most similar selected
 *    first (variant 0 is plain top-S); the reversed variant takes the top-S least similar first;
 *  - uniform random ordered draws, seeded per query (a draw repeating an earlier trajectory is
 *    redrawn, up to 20 times).
 * Two orderings of the same demonstrations are different prompts, so trajectories are
 * de-duplicated as ORDERED lists, keeping the first proposer in the priority order
 * greedy > beam > sample > retrieval > random > topup (the reference collapsed orderings as
 * unordered pairs). Every trajectory also gets its log-probability under the checkpoint
 * (Σ_t log p at the model's own temperature, teacher forced), whoever proposed it.
 */
import { beamDecode, greedyDecode, sampleDecode } from "../selector/decode.js";
import { type Encoded, type PointerSelector, sequenceLogProbs } from "../selector/model.js";
import { noGrad } from "../tensor/tensor.js";
import type { Rng } from "../util/rng.js";

export const GEN_METHODS = ["greedy", "beam", "sample", "retrieval", "random", "topup"] as const;
export type GenMethod = (typeof GEN_METHODS)[number];

export interface ProposalSettings {
  shots: number;
  greedy: boolean;
  /** Beam width; 0 = no beam proposals. */
  beamWidth: number;
  temperatures: readonly number[];
  /** Draws per temperature. */
  samples: number;
  /** Retrieval windows (variants 0 … n−1); 0 = none. */
  retrieval: number;
  /** Also the top-S in reversed selection order. */
  retrievalReversed: boolean;
  random: number;
}

export interface Proposal {
  positions: number[];
  genMethod: GenMethod;
  temperature: number | null;
  beamRank: number | null;
  similarityScore: number | null;
  /** Samples: Σ log q under the sampling temperature. */
  sampleLogprob: number | null;
}

/** The checkpoint's view of one query: the model and its pool encoded once (B = 1). */
export interface PolicyView {
  model: PointerSelector;
  enc: Encoded;
}

/** An ordered-trajectory group that keeps the first proposal of every distinct ordered list. */
export class ProposalGroup {
  readonly proposals: Proposal[] = [];
  private readonly seen = new Set<string>();

  has(positions: readonly number[]): boolean {
    return this.seen.has(positions.join(","));
  }

  /** Adds the proposal unless the same ordered trajectory is already there; returns whether it was added. */
  add(proposal: Proposal): boolean {
    const key = proposal.positions.join(",");
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    this.proposals.push(proposal);
    return true;
  }
}

const base = { temperature: null, beamRank: null, similarityScore: null, sampleLogprob: null };

/**
 * Proposals for one query in priority order, de-duplicated. `similarity[p]` is the cosine similarity
 * of pool position p to the query; `rng` is the query's own stream.
 */
export function propose(
  settings: ProposalSettings,
  context: { K: number; similarity: ArrayLike<number>; rng: Rng; policy?: PolicyView },
): ProposalGroup {
  const { K, similarity, rng, policy } = context;
  const S = settings.shots;
  const group = new ProposalGroup();
  if (policy !== undefined) {
    const { model, enc } = policy;
    if (settings.greedy)
      group.add({ ...base, positions: greedyDecode(model, enc, S)[0].positions, genMethod: "greedy" });
    if (settings.beamWidth > 0)
      beamDecode(model, enc, S, settings.beamWidth)[0].forEach((t, rank) => {
        group.add({ ...base, positions: t.positions, genMethod: "beam", beamRank: rank });
      });
    settings.temperatures.forEach((temperature, i) => {
      if (settings.samples < 1) return;
      const draws = sampleDecode(model, enc, S, {
        samples: settings.samples,
        temperature,
        rng: rng.child("sample").child(i),
      })[0];
      for (const t of draws)
        group.add({
          ...base,
          positions: t.positions,
          genMethod: "sample",
          temperature,
          sampleLogprob: t.sampleLogprob,
        });
    });
  }
  const ranked = Array.from({ length: K }, (_, p) => p).sort((a, b) => similarity[b] - similarity[a] || a - b);
  const meanSimilarity = (positions: readonly number[]) =>
    positions.reduce((s, p) => s + similarity[p], 0) / positions.length;
  for (let r = 0; r < settings.retrieval && r + S <= K; r++) {
    const positions = ranked.slice(r, r + S);
    group.add({ ...base, positions, genMethod: "retrieval", similarityScore: meanSimilarity(positions) });
  }
  if (settings.retrievalReversed && S > 1) {
    const positions = ranked.slice(0, S).reverse();
    group.add({ ...base, positions, genMethod: "retrieval", similarityScore: meanSimilarity(positions) });
  }
  addRandom(group, settings.random, K, S, rng.child("random"), "random");
  return group;
}

/** `n` uniform random ordered trajectories not yet in the group (each redrawn up to 20 times). */
export function addRandom(group: ProposalGroup, n: number, K: number, S: number, rng: Rng, method: GenMethod): number {
  let added = 0;
  for (let i = 0; i < n; i++) {
    for (let attempt = 0; attempt < 20; attempt++) {
      if (group.add({ ...base, positions: rng.sampleWithoutReplacement(K, S), genMethod: method })) {
        added++;
        break;
      }
    }
  }
  return added;
}

/** New temperature samples from the checkpoint as top-up proposals (duplicates of the group skipped). */
export function addSamples(
  group: ProposalGroup,
  policy: PolicyView,
  shots: number,
  n: number,
  temperature: number,
  rng: Rng,
): number {
  const draws = sampleDecode(policy.model, policy.enc, shots, { samples: n, temperature, rng })[0];
  let added = 0;
  for (const t of draws)
    if (
      group.add({
        ...base,
        positions: t.positions,
        genMethod: "topup",
        temperature,
        sampleLogprob: t.sampleLogprob,
      })
    )
      added++;
  return added;
}

/** Σ_t log p of each trajectory under the checkpoint (teacher forced on the query's one encoding). */
export function policyLogprobs(policy: PolicyView, trajectories: readonly (readonly number[])[]): number[] {
  if (trajectories.length === 0) return [];
  const steps = trajectories[0].length;
  const G = trajectories.length;
  const labels = new Int32Array(G * steps);
  trajectories.forEach((t, g) => {
    labels.set(t, g * steps);
  });
  const logp = noGrad(() => sequenceLogProbs(policy.model.teacherForce(policy.enc, G, labels, steps), labels).data);
  return Array.from(logp);
}
