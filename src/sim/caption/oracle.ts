/**
 * The oracle of the simulated captioning VLM (docs/captioning.md, "Measured: the caption demo"): the
 * demonstrations from a query's pool whose prompt makes the simulator's greedy caption score the
 * highest CIDEr-D against the query's references — what no real selector can know (it reads the
 * query's references and runs the VLM on every candidate), shown as a ceiling, never as a method.
 *
 * Search: greedy, from the query outward. Slot 1 (next to the query) gets the candidate whose
 * one-demonstration prompt scores best; slot 2 (farther out) the candidate that, added in front of the
 * slot-1 demonstration, scores best; and so on. Exact at one shot; at more shots a lower bound on the
 * best prompt (an exact search over 32 candidates and 4 slots is 863,040 prompts per query). The
 * prompt of s shots is the search's first s slots, so one search serves every shot count: K + (K−1) +
 * … generations per query, memoised per (query, pool).
 *
 * Score: the rewards' scorer (src/task/caption-scoring.ts with the index as its reference set): the
 * post-processed caption's per-image CIDEr-D, document frequencies from the index's references (the
 * `fixed` mode: a query's oracle does not depend on which other queries are evaluated); each
 * demonstration shows the caption the dataset shows (`answer`, the import's demo reference).
 * Ties keep the earlier pool position.
 *
 * The informed ceiling (`knows: "world"`) runs the same search against references the world writes
 * afresh for the query (INFORMED_REFERENCES of them, by annotators drawn from a stream of the run's seed
 * named after the query): it knows everything the world knows — what the image shows, every candidate's
 * teacher quality, the VLM itself — but not the query's actual references. The gap between it and the
 * oracle is what knowing the references adds; the gap between a selector and it, what the selector
 * could still learn from the world (an upper bound for selectors, as the VQA informed ceiling).
 */
import type { VqaItem } from "../../data/item.js";
import { captionAnswering } from "../../task/caption-scoring.js";
import type { AnswerScoring } from "../../task/types.js";
import { LeverError } from "../../util/errors.js";
import { Rng } from "../../util/rng.js";
import type { VlmPrompt } from "../../vlm/types.js";
import type { SimCaptionVlm } from "./vlm.js";

/** References the informed ceiling draws per query (two annotator panels' worth). */
export const INFORMED_REFERENCES = 10;

export interface CaptionOracleOptions {
  /** "references": the query's own references (the oracle); "world": fresh ones from the world (informed). */
  knows: "references" | "world";
  /** Seed of the informed ceiling's reference draws (the evaluation's). */
  seed: number;
}

export class CaptionOracle {
  private readonly byId: Map<string, VqaItem>;
  /** One scorer per search: its reference vectors are memoised per query id, and a search scores one target per query. */
  private readonly answering: AnswerScoring;
  /** Prompt-order searches so far, nearest slot LAST, keyed by query and pool. */
  private readonly searches = new Map<string, string[]>();

  constructor(
    readonly sim: SimCaptionVlm,
    index: readonly VqaItem[],
    readonly options: CaptionOracleOptions = { knows: "references", seed: 0 },
  ) {
    this.byId = new Map(index.map((item) => [item.questionId, item]));
    this.answering = captionAnswering({ references: index });
  }

  /** CIDEr-D (fixed frequencies, ×10 as pycocoevalcap's per image) of the greedy caption for demonstrations in prompt order. */
  score(query: VqaItem, demoIds: readonly string[]): number {
    const caption = this.answering.postprocess(this.sim.caption(this.prompt(query, demoIds)));
    return this.answering.score(caption, this.target(query));
  }

  /** The greedy search's `shots` demonstrations, in PROMPT order (the last one next to the query). */
  trajectory(query: VqaItem, pool: readonly string[], shots: number): string[] {
    const key = `${query.questionId}\u0000${pool.join("\u0000")}`;
    let found = this.searches.get(key) ?? [];
    if (found.length < Math.min(shots, pool.length)) {
      found = this.extend(query, pool, found, Math.min(shots, pool.length));
      this.searches.set(key, found);
    }
    return found.slice(found.length - Math.min(shots, found.length));
  }

  /** Adds slots farther from the query to a prompt-order search until it has `shots`. */
  private extend(query: VqaItem, pool: readonly string[], start: readonly string[], shots: number): string[] {
    for (const id of pool)
      if (!this.byId.has(id))
        throw new LeverError("a pool candidate is not in the index dataset", {
          record: query.questionId,
          field: "pool",
        });
    const chosen = [...start];
    while (chosen.length < shots) {
      let best: string | null = null;
      let bestScore = Number.NEGATIVE_INFINITY;
      for (const id of pool) {
        if (chosen.includes(id)) continue;
        const value = this.score(query, [id, ...chosen]);
        if (value > bestScore) [best, bestScore] = [id, value];
      }
      chosen.unshift(best as string);
    }
    return chosen;
  }

  /** What the search scores against: the query itself (its references), or it with the world's fresh references. */
  target(query: VqaItem): VqaItem {
    if (this.options.knows === "references") return query;
    const drawn = this.sim.world.drawReferences(
      this.sim.itemIndex(query.questionId, "query.questionId"),
      new Rng(this.options.seed).child(`informed|${query.questionId}`),
      INFORMED_REFERENCES,
    );
    return { ...query, answers: drawn.map((answer) => ({ answer })) };
  }

  private prompt(query: VqaItem, demoIds: readonly string[]): VlmPrompt {
    return {
      query: { questionId: query.questionId, imagePath: null, question: query.question },
      demonstrations: demoIds.map((id) => {
        const item = this.byId.get(id) as VqaItem;
        return { questionId: id, imagePath: null, question: item.question, answer: item.answer };
      }),
    };
  }
}
