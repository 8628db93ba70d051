/**
 * The dataset tables of a workspace — `datasets`, `items` and `embeddings` (SQL: src/store/datasets.ts):
 * a dataset and its items stored in one transaction (image paths inside the workspace stored
 * workspace-relative), read back resolved, and the embeddings recorded for it. A dataset a run read is
 * never replaced (the refusal is the run tables').
 */
import type { VqaItem } from "../data/item.js";
import * as datasets from "./datasets.js";
import { fromStored, toStored } from "./files.js";
import type { DatasetInput, DatasetRecord, EmbeddingRecord } from "./types.js";
import { StageTables } from "./workspace-stages.js";

/** A workspace's datasets, their items and their embeddings. */
export abstract class DatasetTables extends StageTables {
  /**
   * Stores a dataset and its items in one transaction; an existing name is refused unless `replace`,
   * and always once a run read it (`refuseReplacingDataset`).
   */
  putDataset(record: DatasetInput, items: readonly VqaItem[], options: { replace?: boolean } = {}): DatasetRecord {
    if (options.replace === true) this.refuseReplacingDataset(record.name);
    const imagePath = (item: VqaItem) => (item.imagePath === null ? null : toStored(this.dir, item.imagePath));
    const stored = items.map((item) => ({ ...item, imagePath: imagePath(item) }));
    return this.resolved(datasets.putDataset(this.db, this.stored(record), stored, options));
  }

  getDataset(name: string): DatasetRecord | undefined {
    return this.resolved(datasets.getDataset(this.db, name));
  }

  /** Like getDataset but throws a LeverError naming the missing dataset. */
  requireDataset(name: string): DatasetRecord {
    return this.resolved(datasets.requireDataset(this.db, name));
  }

  listDatasets(): DatasetRecord[] {
    return this.resolved(datasets.listDatasets(this.db));
  }

  /** All items of a dataset ordered by question id (compareQuestionIds). */
  loadItems(name: string): VqaItem[] {
    const items = datasets.loadItems(this.db, name);
    for (const item of items) if (item.imagePath !== null) item.imagePath = fromStored(this.dir, item.imagePath);
    return items;
  }

  deleteDataset(name: string): boolean {
    return datasets.deleteDataset(this.db, name);
  }

  putEmbedding(e: EmbeddingRecord): EmbeddingRecord {
    return datasets.putEmbedding(this.db, e);
  }

  getEmbedding(dataset: string, kind: string): EmbeddingRecord | undefined {
    return datasets.getEmbedding(this.db, dataset, kind);
  }

  listEmbeddings(dataset?: string): EmbeddingRecord[] {
    return datasets.listEmbeddings(this.db, dataset);
  }
}
