/**
 * What a selector checkpoint records of how it was trained that every reader must repeat: the
 * embedding kind it read (`provenance.notes.embedding`) and the sampler its training pools were drawn
 * with (`provenance.notes.poolSampler`). Every trainer records both (SFT, RCE, GRPO; a run trained
 * without a pool set records no sampler). A reader — `lever eval --retriever selector:X`, `lever
 * rollouts --checkpoint X`, `lever train sft|rce|grpo --init X` and `--reference X` — takes them
 * as its defaults and refuses a value given otherwise (a flag, or the pool set it reads) that differs,
 * in one line naming the checkpoint, the field and the flag. Imported and older checkpoints may record
 * neither; then nothing is checked and the reader's documented defaults apply.
 */
import { EMBEDDING_KINDS, type EmbeddingKind } from "../data/embeddings.js";
import { SAMPLERS, type SamplerName } from "../pools/samplers.js";
import type { Provenance } from "../selector/checkpoint.js";
import { LeverError } from "../util/errors.js";

export interface TrainedWith {
  embedding?: EmbeddingKind;
  poolSampler?: SamplerName;
}

/** A value a reader was given, and where it came from (a flag, or the file it reads), for the refusal. */
export interface Given<T> {
  value: T | undefined;
  /** e.g. "--selector-embedding", or "--pools (a random pool set)". */
  from: string;
}

/** The recorded embedding kind and pool sampler; an unknown value is one error naming the field. */
export function trainedWith(provenance: Provenance, file: string): TrainedWith {
  const { embedding, poolSampler } = provenance.notes;
  if (embedding !== undefined && !(EMBEDDING_KINDS as readonly string[]).includes(embedding))
    throw new LeverError(`unknown embedding kind "${embedding}"`, { file, field: "provenance.notes.embedding" });
  if (poolSampler !== undefined && !(SAMPLERS as readonly string[]).includes(poolSampler))
    throw new LeverError(`unknown pool sampler "${poolSampler}"`, { file, field: "provenance.notes.poolSampler" });
  return {
    ...(embedding !== undefined ? { embedding: embedding as EmbeddingKind } : {}),
    ...(poolSampler !== undefined ? { poolSampler: poolSampler as SamplerName } : {}),
  };
}

/** Refuses a given embedding kind or pool sampler that is not the one the checkpoint was trained with. */
export function checkTrainedWith(
  trained: TrainedWith,
  file: string,
  given: { embedding?: Given<string>; poolSampler?: Given<string> },
): void {
  const { embedding, poolSampler } = given;
  if (trained.embedding !== undefined && embedding?.value !== undefined && embedding.value !== trained.embedding)
    throw new LeverError(
      `the selector was trained on "${trained.embedding}" embeddings, not "${embedding.value}" (${embedding.from}); it reads only the kind it was trained on`,
      { file, field: "provenance.notes.embedding" },
    );
  if (
    trained.poolSampler !== undefined &&
    poolSampler?.value !== undefined &&
    poolSampler.value !== trained.poolSampler
  )
    throw new LeverError(
      `the selector was trained on "${trained.poolSampler}" pools, not "${poolSampler.value}" (${poolSampler.from}); use pools of the sampler it was trained on`,
      { file, field: "provenance.notes.poolSampler" },
    );
}
