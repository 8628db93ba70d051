/**
 * Small stand-ins for the evaluation tests: a toy index/query set, a reference pool provider that
 * keeps the pool contract (exclusions, per-query determinism), and a counting VLM.
 */
import type { VqaItem } from "../../src/data/item.js";
import type { PoolProvider } from "../../src/eval/retrievers.js";
import type { SamplerName } from "../../src/pools/samplers.js";
import { Rng } from "../../src/util/rng.js";
import {
  type CallOptions,
  type GenerateResult,
  type Outcome,
  type Vlm,
  type VlmFailure,
  type VlmPrompt,
  vlmFailure,
} from "../../src/vlm/types.js";

export function makeItem(questionId: string, imageId: string, answer: string, concept = 0): VqaItem {
  return {
    questionId,
    imageId,
    question: `what is shown in ${imageId} (concept ${concept})?`,
    answers: Array.from({ length: 10 }, () => ({ answer })),
    answer,
    questionType: `type${concept % 3}`,
    answerType: "other",
    imagePath: null,
  };
}

/** `n` items over `n / 2` images (two questions per image), answers by concept. */
export function makeItems(prefix: string, n: number, concepts = 5, offset = 0): VqaItem[] {
  return Array.from({ length: n }, (_, i) => {
    const concept = i % concepts;
    return makeItem(String(offset + i), `${prefix}img${Math.floor(i / 2)}`, `answer${concept}`, concept);
  });
}

/** A deterministic pseudo-embedding: concept direction plus item-specific noise. */
function embed(item: VqaItem, kind: string): number[] {
  const rng = new Rng(7).child(`${kind}:${item.questionId}`);
  const concept = Number(item.answer.replace("answer", ""));
  return Array.from({ length: 8 }, (_, d) => (d === concept ? 1 : 0) + 0.3 * rng.normal());
}

/** Reference pool contract over `index`: query + same-image items excluded, seeded per query. */
export function referencePools(index: readonly VqaItem[], seed: number, calls?: string[]): PoolProvider {
  return async (queries, sampler: SamplerName, k) =>
    queries.map((query) => {
      calls?.push(`${sampler}:${k}:${query.questionId}`);
      const allowed = index.filter((item) => item.questionId !== query.questionId && item.imageId !== query.imageId);
      if (k > allowed.length) throw new Error("k too large");
      if (sampler === "random" || sampler === "mix") {
        const rng = new Rng(seed).child(`${sampler}:${query.questionId}`);
        return rng.sampleWithoutReplacement(allowed.length, k).map((i) => allowed[i].questionId);
      }
      const kind = sampler.replace("-sim", "");
      const q = embed(query, kind);
      const scored = allowed.map((item) => {
        const e = embed(item, kind);
        return { id: item.questionId, s: e.reduce((acc, v, d) => acc + v * q[d], 0) };
      });
      scored.sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1));
      return scored.slice(0, k).map((x) => x.id);
    });
}

/**
 * A VLM stand-in: answers with the majority answer of its demonstrations ("unknown" with none),
 * counts prompts it really receives, and fails the prompts `fail` says to fail.
 */
export class CountingVlm implements Vlm {
  readonly id = "counting-vlm";
  prompts = 0;
  calls = 0;
  constructor(private readonly fail: (prompt: VlmPrompt) => VlmFailure | null = () => null) {}

  async generate(prompts: VlmPrompt[], options?: CallOptions<GenerateResult>): Promise<Outcome<GenerateResult>[]> {
    this.calls++;
    this.prompts += prompts.length;
    await new Promise((resolve) => setTimeout(resolve, 0));
    return prompts.map((prompt): Outcome<GenerateResult> => {
      // Like a backend whose in-flight requests fail when the caller gives up.
      if (options?.signal?.aborted) return vlmFailure("timeout", "aborted by the caller");
      const failure = this.fail(prompt);
      if (failure !== null) return failure;
      const counts = new Map<string, number>();
      for (const d of prompt.demonstrations) counts.set(d.answer, (counts.get(d.answer) ?? 0) + 1);
      let best = "unknown";
      let bestCount = 0;
      for (const [answer, count] of counts) if (count > bestCount) [best, bestCount] = [answer, count];
      return { text: ` ${best}, maybe`, tokens: 2 };
    });
  }

  async scoreAnswer(): Promise<never> {
    throw new Error("not used");
  }
}
