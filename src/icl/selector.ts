/**
 * `selector:CKPT` at evaluation time: load a strict checkpoint and greedily decode, for every query,
 * from THAT QUERY'S OWN POOL built through the pool contract (docs/selector.md: the reference decoded every
 * query from training rows 0…K−1). The pool sampler, K and the embedding kind the selector reads
 * come from explicit flags, else from the checkpoint (trained K; provenance notes `poolSampler`
 * and `embedding` when the trainer recorded them), else the documented defaults. A flag naming another
 * embedding kind or pool sampler than the checkpoint records is refused (src/icl/trained-with.ts).
 */
import { readFileSync } from "node:fs";
import type { EmbeddingKind, EmbeddingMatrix } from "../data/embeddings.js";
import type { VqaItem } from "../data/item.js";
import { DEFAULT_POOL, type SamplerName } from "../pools/samplers.js";
import { type Checkpoint, checkIndexFits, loadCheckpoint } from "../selector/checkpoint.js";
import { readsCandidateData } from "../selector/config.js";
import { predict } from "../selector/decode.js";
import { type CandidateSource, type SelectorSources, selectorInputOf, selectorSources } from "../selector/inputs.js";
import { PointerSelector, type SelectorInput } from "../selector/model.js";
import { LeverError } from "../util/errors.js";
import { sha256 } from "../util/hash.js";
import { candidateData, voteWeightingOf } from "./candidate-data.js";
import { checkTrainedWith, trainedWith } from "./trained-with.js";

/** What a selector reads when neither flags nor its checkpoint say: the default pool and the joint embedding. */
export const SELECTOR_DEFAULTS: { poolSampler: SamplerName; k: number; embedding: EmbeddingKind } = {
  poolSampler: DEFAULT_POOL.sampler,
  k: DEFAULT_POOL.k,
  embedding: "joint",
};

export interface SelectorSettings {
  /** Explicit flags win over the checkpoint's own settings. */
  poolSampler?: SamplerName;
  k?: number;
  embedding?: EmbeddingKind;
  /** What gave poolSampler and embedding, for a refusal (default "--pool-sampler", "--selector-embedding"). */
  from?: { poolSampler?: string; embedding?: string };
}

export interface SelectorEmbeddings {
  /** Embedding matrix of the query dataset / index dataset of the given kind. */
  query(kind: EmbeddingKind): EmbeddingMatrix;
  index(kind: EmbeddingKind): EmbeddingMatrix;
  /** The index dataset's name and items, for a selector that reads its candidates' answers or identities. */
  indexItems?(): { dataset: string; items: readonly VqaItem[] };
}

/** A loaded pointer selector, ready to choose from each query's own pool. */
export interface SelectorHandle {
  /** Label stored with predictions: names the checkpoint and its content hash (never ambiguous). */
  readonly label: string;
  /** Pool sampler and K this selector chooses from (checkpoint metadata or flags). */
  readonly sampler: SamplerName;
  readonly k: number;
  /** Greedy decode: for each query, `shots` distinct positions into its pool, in selection order. */
  choose(queries: readonly VqaItem[], pools: readonly string[][], shots: number): Promise<number[][]>;
}

export interface LoadedSelector extends SelectorHandle {
  readonly embedding: EmbeddingKind;
  /** Where each setting came from: "flag", "checkpoint" or "default". */
  readonly sources: Record<"poolSampler" | "k" | "embedding", "flag" | "checkpoint" | "default">;
}

/** A checkpoint opened for decoding: the model, its resolved settings and its inputs for given queries. */
export interface OpenedSelector extends Omit<LoadedSelector, "choose"> {
  readonly checkpoint: Checkpoint;
  readonly model: PointerSelector;
  /** The selector's input for queries and their pools (pool order = position order), from src/selector/inputs.ts. */
  input(queries: readonly VqaItem[], pools: readonly (readonly string[])[]): SelectorInput;
  /**
   * What `input` reads (src/selector/inputs.ts): the index table, candidate data and centring, with the
   * query dataset's table; `lever serve` swaps in a table of the requests' own embeddings.
   */
  readonly inputSources: SelectorSources;
}

export function loadSelector(path: string, flags: SelectorSettings, embeddings: SelectorEmbeddings): LoadedSelector {
  const opened = openSelector(path, flags, embeddings);
  const { model, input, checkpoint: _checkpoint, inputSources: _sources, ...handle } = opened;
  return {
    ...handle,
    async choose(queries, pools, shots) {
      return predict(model, input(queries, pools), { shots }).map((t) => t.positions);
    },
  };
}

export function openSelector(path: string, flags: SelectorSettings, embeddings: SelectorEmbeddings): OpenedSelector {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new LeverError(`cannot read the selector checkpoint: ${(error as Error).message}`, { file: path });
  }
  const checkpoint = loadCheckpoint(path);
  const trained = trainedWith(checkpoint.provenance, path);
  checkTrainedWith(trained, path, {
    poolSampler: { value: flags.poolSampler, from: flags.from?.poolSampler ?? "--pool-sampler" },
    embedding: { value: flags.embedding, from: flags.from?.embedding ?? "--selector-embedding" },
  });
  const sources = {} as LoadedSelector["sources"];
  const pick = <T>(name: keyof LoadedSelector["sources"], flag: T | undefined, stored: T | undefined, fallback: T) => {
    sources[name] = flag !== undefined ? "flag" : stored !== undefined ? "checkpoint" : "default";
    return flag ?? stored ?? fallback;
  };
  const sampler = pick("poolSampler", flags.poolSampler, trained.poolSampler, SELECTOR_DEFAULTS.poolSampler);
  const k = pick("k", flags.k, checkpoint.trainedK ?? undefined, SELECTOR_DEFAULTS.k);
  const embedding = pick("embedding", flags.embedding, trained.embedding, SELECTOR_DEFAULTS.embedding);

  const model = new PointerSelector(checkpoint.config, checkpoint.params, "float32");
  const { d } = checkpoint.config;
  const queryMatrix = embeddings.query(embedding);
  const indexMatrix = embeddings.index(embedding);
  for (const [role, matrix] of [
    ["query", queryMatrix],
    ["index", indexMatrix],
  ] as const)
    if (matrix.dim !== d)
      throw new LeverError(
        `the selector reads d=${d} but the ${role} "${embedding}" embeddings have dim ${matrix.dim}`,
        {
          file: path,
          field: "config.d",
        },
      );
  const candidates = readsCandidateData(checkpoint.config)
    ? candidatesFor(checkpoint, indexMatrix, embeddings, path)
    : undefined;
  const inputs = selectorSources(queryMatrix, indexMatrix, candidates, {
    center: checkpoint.config.center === "index-mean",
  });
  const label = `selector:${path}@${sha256(bytes).slice(0, 12)}`;

  return {
    label,
    sampler,
    k,
    embedding,
    sources,
    checkpoint,
    model,
    inputSources: inputs,
    input: (queries, pools) =>
      selectorInputOf(
        inputs,
        queries.map((query, q) => ({ queryId: query.questionId, poolIds: pools[q] })),
      ),
  };
}

/** The index's candidate data for a selector that reads it; a checkpoint with identities must be of this index. */
function candidatesFor(
  checkpoint: Checkpoint,
  indexMatrix: EmbeddingMatrix,
  embeddings: SelectorEmbeddings,
  path: string,
): CandidateSource {
  if (embeddings.indexItems === undefined)
    throw new LeverError(
      "this selector reads its candidates' answers or identities, which need the index dataset's annotations; use it where a workspace dataset is the index (lever eval, lever datagen rollouts)",
      { file: path, field: "config" },
    );
  const { dataset, items } = embeddings.indexItems();
  const data = candidateData(
    dataset,
    indexMatrix,
    items,
    voteWeightingOf(checkpoint.config),
    checkpoint.config.features,
  );
  checkIndexFits(checkpoint, data.index, path);
  return data;
}
