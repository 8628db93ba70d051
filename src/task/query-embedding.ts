/**
 * Which embedding stands for a QUERY when it is compared with the index's embedding of a kind
 * (`Task.queryEmbedding`). Every stage that reads query embeddings — pools, beams, rollouts,
 * training, evaluation — goes through `queryKindOf` / `loadQueryEmbedding`, so no stage can compare
 * a caption query by its own reference caption: a caption query is its image under every kind (text
 * similarity is image → caption, as CLIP retrieves captions for an image). For VQA it is the kind itself.
 */
import type { EmbeddingKind, EmbeddingMatrix } from "../data/embeddings.js";
import { loadDatasetEmbedding } from "../store/ingest/embeddings.js";
import type { DatasetRecord } from "../store/types.js";
import type { Workspace } from "../store/workspace.js";
import { datasetTask } from "./dataset-task.js";

/** The query-side kind for each index kind, by the query dataset's task. */
export function queryKindOf(record: Pick<DatasetRecord, "name" | "details">): (kind: EmbeddingKind) => EmbeddingKind {
  const task = datasetTask(record);
  return (kind) => task.queryEmbedding(kind);
}

/** The query dataset's embedding compared with the index's `kind`. */
export function loadQueryEmbedding(ws: Workspace, dataset: string, kind: EmbeddingKind): EmbeddingMatrix {
  return loadDatasetEmbedding(ws, dataset, queryKindOf(ws.requireDataset(dataset))(kind));
}
