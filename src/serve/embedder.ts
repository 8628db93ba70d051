/**
 * In-process embedding of a request's image and question with the model `lever embed compute` recorded
 * for the index (src/embed/: the same towers, preprocessing, unit rows and joint recipe), so a served
 * query lives in the index's embedding space. The model folder is given (`--embed-model`); it must hold
 * exactly the files the index's embeddings were computed with (their sha256 is in the embedding's
 * record), and index embeddings that were imported rather than computed are refused: nothing says
 * which model made them. Nothing is ever downloaded (src/embed/clip.ts loads local files only).
 */
import { relative, resolve } from "node:path";
import type { EmbeddingKind } from "../data/embeddings.js";
import { type ClipTowers, loadClip, modelFiles, type Tower } from "../embed/clip.js";
import { kindRow, modelRow } from "../embed/compute.js";
import { hashFileSync } from "../store/files.js";
import type { Workspace } from "../store/workspace.js";
import { LeverError } from "../util/errors.js";

export interface EmbedRequest {
  image: Uint8Array;
  question: string;
}

export type QueryEmbeddings = Partial<Record<EmbeddingKind, Float32Array>>;

export interface Embedder {
  readonly kinds: readonly EmbeddingKind[];
  /** The embeddings of each request (every kind of `kinds`), in input order; a request whose image cannot be decoded gets its error. */
  embed(requests: readonly EmbedRequest[]): Promise<(QueryEmbeddings | LeverError)[]>;
  dispose(): Promise<void>;
}

/** Which towers a kind needs. */
const towersOf = (kind: EmbeddingKind): Tower[] => (kind === "joint" ? ["image", "text"] : [kind]);

/**
 * Checks that `modelDir` is the model every kind's index embedding was computed with (one line naming
 * the kind and the file that differs otherwise).
 */
export function checkRecordedModel(
  ws: Workspace,
  index: string,
  kinds: readonly EmbeddingKind[],
  modelDir: string,
): void {
  const root = resolve(modelDir);
  for (const kind of kinds) {
    const record = ws.getEmbedding(index, kind);
    if (record === undefined) throw new LeverError(`index "${index}" has no "${kind}" embedding`, { field: "--index" });
    const computed = (record.details as { computedBy?: { model?: string; files?: Record<string, string> } } | undefined)
      ?.computedBy;
    if (computed?.files === undefined)
      throw new LeverError(
        `index "${index}"'s ${kind} embeddings were imported, not computed by lever embed compute, so no model is known to embed requests like them; start with --client-embeddings and send each request's embedding`,
        { field: "--embed-model" },
      );
    for (const file of modelFiles(root, towersOf(kind))) {
      const name = relative(root, file);
      const recorded = computed.files[name];
      if (recorded === undefined || recorded !== hashFileSync(file).sha256)
        throw new LeverError(
          `${name} is not the file index "${index}"'s ${kind} embeddings were computed with (model ${computed.model ?? "?"}); pass the folder lever embed compute used`,
          { field: "--embed-model" },
        );
    }
  }
}

/** Loads the towers `kinds` need from the (checked) model folder. */
export async function openEmbedder(modelDir: string, kinds: readonly EmbeddingKind[]): Promise<Embedder> {
  const towers = [...new Set(kinds.flatMap(towersOf))];
  const clip: ClipTowers = await loadClip(modelDir, towers);
  return {
    kinds,
    embed: (requests) => embedWith(clip, towers, kinds, requests),
    dispose: () => clip.dispose(),
  };
}

async function embedWith(
  clip: ClipTowers,
  towers: readonly Tower[],
  kinds: readonly EmbeddingKind[],
  requests: readonly EmbedRequest[],
): Promise<(QueryEmbeddings | LeverError)[]> {
  let images: Float32Array | undefined;
  let texts: Float32Array | undefined;
  const imageRow = new Map<number, number>();
  const failed = new Map<number, string>();
  if (towers.includes("image")) {
    const prepared = await clip.prepareImages(requests.map((r) => r.image));
    for (const f of prepared.failed) failed.set(f.index, f.message);
    prepared.ok.forEach((index, row) => {
      imageRow.set(index, row);
    });
    images = await clip.embedImages(prepared);
  }
  if (towers.includes("text")) texts = await clip.embedTexts(requests.map((r) => r.question));
  const row = (data: Float32Array | undefined, tower: Tower, r: number | undefined) => {
    if (data === undefined || r === undefined) return undefined;
    const dim = clip.dims[tower] as number;
    return modelRow(data.subarray(r * dim, (r + 1) * dim), `${tower} embedding`, {});
  };
  return requests.map((request, i) => {
    const failure = failed.get(i);
    if (failure !== undefined) return new LeverError(`the image cannot be used: ${failure}`);
    const image = row(images, "image", imageRow.get(i));
    const text = row(texts, "text", i);
    const out: QueryEmbeddings = {};
    for (const kind of kinds) out[kind] = kindRow(kind, image, text, request.question);
    return out;
  });
}
