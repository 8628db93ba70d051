import { z } from "zod";
import { check, LeverError } from "../util/errors.js";
import { Rng } from "../util/rng.js";
import { compareQuestionIds } from "./item.js";

/** How a stored dataset was cut from its source: the spec ("first:800", "random:800"), seed and source size. */
export interface SubsetRecord {
  spec: string;
  seed: number | null;
  /** Number of items the subset was drawn from. */
  of: number;
}

/**
 * Subsets of a split. `first:N` keeps the N lowest question ids (what the Python reference did
 * with `test_data_num`); `random:N` draws N items uniformly without replacement from a seeded
 * stream. Both return items in question-id order, whatever the input order.
 */
export type SubsetSpec = { kind: "all" } | { kind: "first"; n: number } | { kind: "random"; n: number };

/** A subset spec as a settings field: "first:N", "random:N" or "all". */
export const SubsetSpecSchema = z
  .string()
  .regex(/^(all|(first|random):[1-9]\d*)$/, "expected first:N, random:N or all");

export function parseSubsetSpec(text: string, field = "subset"): SubsetSpec {
  const trimmed = text.trim();
  if (trimmed === "all") return { kind: "all" };
  const match = /^(first|random):(\d+)$/.exec(trimmed);
  if (match === null) {
    throw new LeverError(`expected "first:N", "random:N" or "all", got "${text}"`, { field });
  }
  const n = Number(match[2]);
  check(Number.isSafeInteger(n) && n > 0, `N must be a positive integer, got "${match[2]}"`, { field });
  return { kind: match[1] as "first" | "random", n };
}

export function formatSubsetSpec(spec: SubsetSpec): string {
  return spec.kind === "all" ? "all" : `${spec.kind}:${spec.n}`;
}

/** The stream random subsets draw from; named so other draws with the same seed stay independent. */
const SUBSET_STREAM = "subset";

export function selectSubset<T extends { questionId: string }>(
  items: readonly T[],
  spec: SubsetSpec | string,
  seed: number,
): T[] {
  const parsed = typeof spec === "string" ? parseSubsetSpec(spec) : spec;
  const sorted = [...items].sort((a, b) => compareQuestionIds(a.questionId, b.questionId));
  if (parsed.kind === "all") return sorted;
  if (parsed.n > sorted.length) {
    throw new LeverError(`subset ${formatSubsetSpec(parsed)} asks for more items than the ${sorted.length} available`, {
      field: "subset",
    });
  }
  if (parsed.kind === "first") return sorted.slice(0, parsed.n);
  check(Number.isSafeInteger(seed), `seed must be an integer, got ${seed}`, { field: "seed" });
  const picked = new Rng(seed).child(SUBSET_STREAM).sampleWithoutReplacement(sorted.length, parsed.n);
  picked.sort((a, b) => a - b);
  return picked.map((i) => sorted[i]);
}

/** What a dataset record stores about its subset (null when the whole split was kept). */
export function subsetRecord(spec: SubsetSpec, seed: number, of: number): SubsetRecord | null {
  if (spec.kind === "all") return null;
  return { spec: formatSubsetSpec(spec), seed: spec.kind === "random" ? seed : null, of };
}
