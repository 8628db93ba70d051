/**
 * THE list of evaluation retrievers: one entry per kind, in display order (the order `lever eval`'s
 * summary, `lever compare` and the report show them in). From it come the names `--retriever`
 * accepts and its help (src/eval/retrievers.ts parses them and builds one retriever per kind from a
 * table keyed by these kinds), the rank of a method in a comparison and which methods are references
 * (src/icl/retriever-methods.ts), and the reference list the comparison notes print (src/report/). Adding a
 * retriever is an entry here plus its builder in src/eval/retrievers.ts (docs/architecture.md, "How
 * to add").
 */
import { EMBEDDING_KINDS } from "../data/embeddings.js";
import { CHECKPOINT_REF_HELP } from "./checkpoint-ref.js";

export interface RetrieverEntry {
  /** The names `--retriever` takes, as help shows them ("selector:CKPT": a prefix and an argument). */
  names: readonly string[];
  /** Every name of this kind starts with it (the kinds with several names or an argument). */
  prefix?: string;
  /** What it chooses, for help. */
  description: string;
  /** It chooses within each query's pool (`--pool-sampler`, `--k`; a selector: else its checkpoint's). */
  fromPool?: boolean;
  /** What the evaluation must provide, as in "the vote retriever needs …" (its error when missing). */
  needs?: string;
  /**
   * A reference, not a method: it uses knowledge no real selector has (the simulator's answers), so a
   * comparison shows it as `ref`, outside the Holm family.
   */
  reference?: boolean;
}

export const RETRIEVERS = {
  zero: { names: ["zero"], description: "no demonstrations, 0 shots only" },
  random: { names: ["random"], description: "uniform from the index" },
  topk: {
    names: EMBEDDING_KINDS.map((kind) => `topk-${kind}`),
    prefix: "topk-",
    description: "most similar first on that embedding",
  },
  vote: {
    names: ["vote"],
    description: "the pool's answer vote",
    needs: "the index's annotations and joint embeddings",
    fromPool: true,
  },
  consensus: {
    names: ["consensus"],
    description: "captions: the pool's captions that agree most with the others' (CIDEr-D)",
    needs: "a caption index",
    fromPool: true,
  },
  informed: {
    names: ["informed"],
    description: "the simulator's informed ceiling",
    needs: "the simulated VLM (--vlm sim)",
    fromPool: true,
    reference: true,
  },
  oracle: {
    names: ["oracle"],
    description: "the simulator's oracle",
    needs: "the simulated VLM (--vlm sim)",
    fromPool: true,
    reference: true,
  },
  selector: {
    names: ["selector:CKPT"],
    prefix: "selector:",
    fromPool: true,
    description: `a trained selector, where CKPT is ${CHECKPOINT_REF_HELP}`,
  },
} as const satisfies Record<string, RetrieverEntry>;

export type RetrieverKind = keyof typeof RETRIEVERS;

/** The kinds, in display order. */
export const RETRIEVER_KINDS = Object.keys(RETRIEVERS) as RetrieverKind[];
const KINDS = RETRIEVER_KINDS;

/** A kind's entry, with the optional fields every entry may have. */
const entryOf = (kind: RetrieverKind): RetrieverEntry => RETRIEVERS[kind];

/** Every name `--retriever` takes, in display order. */
export const RETRIEVER_NAMES: readonly string[] = KINDS.flatMap((kind) => RETRIEVERS[kind].names);

/** The kinds that are references (see `RetrieverEntry.reference`), in display order. */
export const REFERENCE_RETRIEVERS: readonly RetrieverKind[] = KINDS.filter((kind) => entryOf(kind).reference === true);

/** The kind a retriever name (as given, or as stored with predictions) belongs to; undefined if none. */
export function retrieverKind(name: string): RetrieverKind | undefined {
  return KINDS.find((kind) => {
    const { names, prefix } = entryOf(kind);
    return names.includes(name) || (prefix !== undefined && name.startsWith(prefix));
  });
}

/** Display rank of a stored retriever name: its kind's place in the catalog (unknown names last). */
export function retrieverRank(name: string): number {
  const kind = retrieverKind(name);
  return kind === undefined ? KINDS.length : KINDS.indexOf(kind);
}

/** The names of the kinds that choose within each query's pool, in display order. */
export const POOL_RETRIEVER_NAMES: readonly string[] = KINDS.filter((kind) => entryOf(kind).fromPool === true).flatMap(
  (kind) => RETRIEVERS[kind].names,
);

/** True for a reference (see `RetrieverEntry.reference`). */
export function isReferenceRetriever(name: string): boolean {
  const kind = retrieverKind(name);
  return kind !== undefined && entryOf(kind).reference === true;
}

/** `--retriever`'s help: every name with what it chooses. */
export function retrieverHelp(kinds: readonly RetrieverKind[] = KINDS): string {
  return kinds
    .map((kind) => {
      const entry = entryOf(kind);
      const needs = entry.needs === undefined ? "" : `, needs ${entry.needs}`;
      return `${entry.names.join(", ")}: ${entry.description}${needs}`;
    })
    .join("; ");
}
