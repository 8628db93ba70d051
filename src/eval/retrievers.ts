/**
 * Test-time demonstration retrievers. Each maps (query, shots) to demonstration ids in SELECTION
 * order (first selected first). Every retriever that draws from the index goes through the pool
 * contract (docs/architecture.md), so the query and its same-image items are excluded the same way
 * everywhere, and choices are deterministic per query (no dependence on the batch). The kinds, their
 * names and help are the catalog's (src/icl/retriever-catalog.ts); this file parses the names and
 * builds each kind from the BUILDERS table, keyed by the catalog's kinds.
 */
import type { EmbeddingKind } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { RETRIEVER_NAMES, RETRIEVERS, type RetrieverKind, retrieverKind } from "../icl/retriever-catalog.js";
import type { SelectorHandle } from "../icl/selector.js";
import type { SamplerName } from "../pools/samplers.js";
import { LeverError } from "../util/errors.js";

/** The kinds named by their name alone (the others carry an embedding or a checkpoint). */
type PlainKind = Exclude<RetrieverKind, "topk" | "selector">;

export type RetrieverSpec =
  | { [K in PlainKind]: { kind: K } }[PlainKind]
  | { kind: "topk"; embedding: EmbeddingKind }
  | { kind: "selector"; checkpoint: string };

/**
 * The pool contract as the evaluation sees it: for each query (in input order) its K candidate ids,
 * ordered as the sampler ranks them (most similar first for similarity samplers). Implementations
 * must exclude the query and every same-image item and be deterministic per query.
 */
export type PoolProvider = (queries: readonly VqaItem[], sampler: SamplerName, k: number) => Promise<string[][]>;

/**
 * A rule choosing `shots` demonstrations within the query's pool, returning SELECTION order: the
 * answer vote (src/eval/vote-retriever.ts), and with the simulator the oracle (the best trajectory, knowing the
 * answers) and the informed ceiling (src/sim/informed.ts).
 */
export type PoolChooser = (query: VqaItem, pool: readonly string[], shots: number) => string[];

export interface Retriever {
  /** Name stored with predictions and shown in tables. */
  readonly name: string;
  /** The shot counts at which this retriever is evaluated, given the requested ones (zero-shot: only 0). */
  shots(requested: readonly number[]): number[];
  /** Demonstration ids per query (input order), in selection order, exactly `shots` each. */
  select(queries: readonly VqaItem[], shots: number): Promise<string[][]>;
}

export interface RetrieverContext {
  pools: PoolProvider;
  /** Sampler and K of "the query's pool" for the oracle (the `--pool-sampler`, `--k` flags). */
  poolSampler: SamplerName;
  k: number;
  /** Largest shot count of the evaluation: similarity pools are fetched once with this K and sliced. */
  maxShots: number;
  /** The answer vote; absent when the index's annotations and embeddings are not available. */
  vote?: PoolChooser;
  /** The caption consensus (src/eval/consensus.ts); absent for a VQA index. */
  consensus?: PoolChooser;
  /** Present only with the simulated VLM. */
  oracle?: PoolChooser;
  informed?: PoolChooser;
  /** Loads `selector:CKPT`; absent when selectors are not available. */
  loadSelector?: (checkpoint: string) => Promise<SelectorHandle>;
}

/** Old names still accepted, with the warning the CLI prints. */
export const DEPRECATED_RETRIEVERS: Record<string, { replacement: string; reason: string }> = {
  "topk-mix": {
    replacement: "topk-joint",
    reason: 'it ranks by the joint embedding ("mix" names the mixed pool sampler only)',
  },
};

/** Parses one retriever name (one of the catalog's: `zero`, `random`, `topk-image|text|joint`, …, `selector:CKPT`). */
export function parseRetrieverSpec(text: string): RetrieverSpec {
  const given = text.trim();
  const name = DEPRECATED_RETRIEVERS[given]?.replacement ?? given;
  const kind = retrieverKind(name);
  if (kind === "selector") {
    const checkpoint = name.slice(RETRIEVERS.selector.prefix.length);
    if (checkpoint.length === 0)
      throw new LeverError("selector needs a checkpoint path: selector:CKPT", { field: "--retriever" });
    return { kind, checkpoint };
  }
  if (kind !== undefined && (RETRIEVERS[kind].names as readonly string[]).includes(name))
    return kind === "topk" ? { kind, embedding: name.slice(RETRIEVERS.topk.prefix.length) as EmbeddingKind } : { kind };
  throw new LeverError(`unknown retriever "${name}" (expected one of ${RETRIEVER_NAMES.join(", ")})`, {
    field: "--retriever",
  });
}

/** Parses a retriever list (names or one comma-separated string); duplicates are an error. */
export function parseRetrieverList(list: string | readonly string[]): RetrieverSpec[] {
  const names = (typeof list === "string" ? [list] : list)
    .flatMap((entry) => entry.split(","))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0) throw new LeverError("no retriever given", { field: "--retriever" });
  const seen = new Set<string>();
  for (const name of names) {
    const canonical = DEPRECATED_RETRIEVERS[name]?.replacement ?? name;
    if (seen.has(canonical)) throw new LeverError(`retriever "${name}" is listed twice`, { field: "--retriever" });
    seen.add(canonical);
  }
  return names.map(parseRetrieverSpec);
}

/** Remembers pools per (sampler, K, query) so retrievers sharing "the query's pool" fetch it once. */
export function memoizePools(pools: PoolProvider): PoolProvider {
  const cache = new Map<string, string[]>();
  return async (queries, sampler, k) => {
    const key = (q: VqaItem) => `${sampler}\u0000${k}\u0000${q.questionId}`;
    const missing = queries.filter((q) => !cache.has(key(q)));
    if (missing.length > 0) {
      const fresh = await pools(missing, sampler, k);
      checkPoolShape(missing, fresh, sampler, k);
      missing.forEach((q, i) => {
        cache.set(key(q), fresh[i]);
      });
    }
    return queries.map((q) => cache.get(key(q)) as string[]);
  };
}

function checkPoolShape(queries: readonly VqaItem[], pools: string[][], sampler: string, k: number): void {
  if (pools.length !== queries.length)
    throw new Error(`pool provider returned ${pools.length} pools for ${queries.length} queries (${sampler})`);
  pools.forEach((pool, i) => {
    if (pool.length !== k)
      throw new LeverError(`the ${sampler} pool has ${pool.length} candidates, expected ${k}`, {
        record: queries[i].questionId,
        field: "pool",
      });
  });
}

/** Builds one kind's retriever from its spec; a selector's checkpoint is loaded here (once). */
type Builder<K extends RetrieverKind> = (
  spec: Extract<RetrieverSpec, { kind: K }>,
  context: RetrieverContext,
) => Retriever | Promise<Retriever>;

/**
 * A retriever choosing within the query's pool of the configured sampler and K, like a selector, with
 * the context's chooser of its kind (its error, naming what it needs, when the evaluation has none).
 */
function poolChooserRetriever(
  spec: { kind: "vote" | "consensus" | "oracle" | "informed" },
  context: RetrieverContext,
): Retriever {
  const choose = context[spec.kind];
  if (!choose)
    throw new LeverError(`the ${spec.kind} retriever needs ${RETRIEVERS[spec.kind].needs}`, { field: "--retriever" });
  return {
    name: spec.kind,
    shots: positiveShots,
    select: async (queries, shots) => {
      const pools = await context.pools(queries, context.poolSampler, context.k);
      return queries.map((query, i) => choose(query, pools[i], shots));
    },
  };
}

/** How each of the catalog's kinds is built. */
const BUILDERS: { [K in RetrieverKind]: Builder<K> } = {
  zero: () => ({
    name: "zero",
    shots: () => [0],
    select: async (queries) => queries.map(() => []),
  }),
  // The random sampler of the pool contract with K = shots: uniform without replacement,
  // seeded per query, exclusions applied.
  random: (_spec, context) => ({
    name: "random",
    shots: positiveShots,
    select: (queries, shots) => context.pools(queries, "random", shots),
  }),
  topk: (spec, context) => {
    const sampler: SamplerName = `${spec.embedding}-sim` as SamplerName;
    return {
      name: `topk-${spec.embedding}`,
      shots: positiveShots,
      // Most similar first: the first `shots` of the similarity pool over the whole index.
      select: async (queries, shots) =>
        (await context.pools(queries, sampler, context.maxShots)).map((pool) => pool.slice(0, shots)),
    };
  },
  vote: poolChooserRetriever,
  consensus: poolChooserRetriever,
  informed: poolChooserRetriever,
  oracle: poolChooserRetriever,
  selector: async (spec, context) => {
    if (!context.loadSelector)
      throw new LeverError("selectors are not available in this build", { field: "--retriever" });
    const selector = await context.loadSelector(spec.checkpoint);
    return {
      name: selector.label,
      shots: positiveShots,
      select: async (queries, shots) => {
        // The selector chooses from ITS OWN QUERY'S POOL (never a fixed set of rows; docs/selector.md).
        const pools = await context.pools(queries, selector.sampler, selector.k);
        const positions = await selector.choose(queries, pools, shots);
        return positions.map((chosen, i) => positionsToIds(queries[i], pools[i], chosen, selector.label));
      },
    };
  },
};

/** Builds the retriever for a spec. Selector checkpoints are loaded here (once). */
export async function createRetriever(spec: RetrieverSpec, context: RetrieverContext): Promise<Retriever> {
  return (BUILDERS[spec.kind] as Builder<RetrieverKind>)(spec as never, context);
}

function positiveShots(requested: readonly number[]): number[] {
  return requested.filter((s) => s > 0);
}

function positionsToIds(query: VqaItem, pool: readonly string[], positions: number[], label: string): string[] {
  return positions.map((p) => {
    if (!Number.isInteger(p) || p < 0 || p >= pool.length)
      throw new LeverError(`${label} chose position ${p}, outside the pool of ${pool.length}`, {
        record: query.questionId,
        field: "positions",
      });
    return pool[p];
  });
}

/**
 * The invariant every retriever must keep, checked by the runner on every selection so a bug in a
 * sampler or selector cannot reach the VLM: exactly `shots` distinct index items, never the query,
 * never an item sharing the query's image.
 */
export function checkDemonstrations(
  retriever: string,
  query: VqaItem,
  shots: number,
  ids: readonly string[],
  index: ReadonlyMap<string, VqaItem>,
): void {
  const where = { record: query.questionId, field: `${retriever}@${shots}` };
  if (ids.length !== shots)
    throw new LeverError(`retriever returned ${ids.length} demonstrations, expected ${shots}`, where);
  const seen = new Set<string>();
  for (const id of ids) {
    const item = index.get(id);
    if (!item) throw new LeverError(`demonstration ${id} is not in the index dataset`, where);
    if (seen.has(id)) throw new LeverError(`demonstration ${id} is chosen twice`, where);
    seen.add(id);
    if (id === query.questionId) throw new LeverError("the query was chosen as its own demonstration", where);
    if (item.imageId === query.imageId)
      throw new LeverError(`demonstration ${id} shares the query's image ${query.imageId}`, where);
  }
}
