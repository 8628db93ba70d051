/**
 * Resume state of `lever embed compute`: finished batches kept in the workspace until the matrix is
 * complete, so a killed run continues where it stopped and no finished row is computed twice.
 *
 * Layout, under artifacts/embeddings/<dataset>/.partial-<kind>/:
 *   state.json             what the rows depend on (dataset items, model files, unit lists, flags)
 *   <tower>-<start>.npy    float32 [count, dim]: L2-normalised rows of units start … start+count−1
 *                          of that tower (distinct images or distinct question texts); a unit that
 *                          was skipped (--skip-missing) is a row of NaN.
 * Every file is written atomically, so a kill leaves whole batches only. A tower's finished prefix
 * is the run of batch files that tile 0, 1, … without a gap; anything after a gap is recomputed.
 * A state.json that does not match the current run (other model, dataset or flags) means the
 * batches belong to something else: the folder is cleared and the run starts over.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { encodeNpy, readNpy } from "../data/npy.js";
import { writeFileAtomic } from "../util/atomic.js";
import { LeverError } from "../util/errors.js";
import type { Tower } from "./clip.js";

export const PARTIAL_FORMAT = "lever.embed-partial/1";

/** Everything the stored rows depend on; compared as a whole. */
export interface PartialIdentity {
  format: typeof PARTIAL_FORMAT;
  dataset: string;
  itemsHash: string;
  kind: string;
  /** sha256 of every model file used, by path relative to the model folder. */
  model: Record<string, string>;
  /** sha256 of each tower's unit list (image paths or question texts, in order) and its length. */
  units: Partial<Record<Tower, { count: number; sha256: string }>>;
  skipMissing: boolean;
}

interface Batch {
  start: number;
  count: number;
  file: string;
}

export class PartialStore {
  readonly dir: string;
  /** True when a folder left by a run with another identity was cleared. */
  readonly discarded: boolean;
  private readonly batches: Record<Tower, Batch[]>;

  private constructor(dir: string, batches: Record<Tower, Batch[]>, discarded: boolean) {
    this.dir = dir;
    this.batches = batches;
    this.discarded = discarded;
  }

  /** Opens the folder for `identity`, keeping its batches if they were made for the same identity. */
  static open(dir: string, identity: PartialIdentity): PartialStore {
    const stateFile = join(dir, "state.json");
    const wanted = JSON.stringify(identity);
    let discarded = false;
    if (existsSync(dir) && !(existsSync(stateFile) && readFileSync(stateFile, "utf8").trim() === wanted)) {
      rmSync(dir, { recursive: true, force: true });
      discarded = true;
    }
    mkdirSync(dir, { recursive: true });
    if (!existsSync(stateFile)) writeFileAtomic(stateFile, `${wanted}\n`);
    return new PartialStore(dir, { image: scan(dir, "image"), text: scan(dir, "text") }, discarded);
  }

  /** Units of `tower` already stored: how far the batches reach from 0 without a gap. */
  done(tower: Tower): number {
    let next = 0;
    for (const batch of this.cover(tower)) next = batch.start + batch.count;
    return next;
  }

  /** Stores rows [count, dim] of units start … start+count−1 atomically. */
  writeBatch(tower: Tower, start: number, rows: Float32Array, dim: number): void {
    const count = rows.length / dim;
    const file = join(this.dir, `${tower}-${String(start).padStart(9, "0")}.npy`);
    writeFileAtomic(file, encodeNpy(rows, [count, dim]));
    const list = this.batches[tower].filter((batch) => batch.start !== start);
    list.push({ start, count, file });
    this.batches[tower] = list.sort((a, b) => a.start - b.start);
  }

  /** All `units` rows of a tower, [units, dim]; every unit must be stored and every batch as wide. */
  readTower(tower: Tower, units: number): { rows: Float32Array; dim: number } {
    let dim = -1;
    let rows = new Float32Array(0);
    let next = 0;
    for (const batch of this.cover(tower)) {
      const array = readNpy(batch.file);
      if (array.dtype !== "<f4" || array.shape.length !== 2 || array.shape[0] !== batch.count)
        throw new LeverError(`partial batch holds ${array.dtype} [${array.shape.join(", ")}]`, { file: batch.file });
      if (dim === -1) {
        dim = array.shape[1];
        rows = new Float32Array(units * dim);
      } else if (array.shape[1] !== dim)
        throw new LeverError(`partial batch is ${array.shape[1]} wide, earlier batches ${dim}`, { file: batch.file });
      const skip = next - batch.start; // rows an earlier batch already covered
      rows.set((array.data as Float32Array).subarray(skip * dim), next * dim);
      next = batch.start + batch.count;
    }
    if (next !== units)
      throw new LeverError(`partial results cover ${next} of ${units} ${tower} units`, { file: this.dir });
    return { rows, dim };
  }

  /** Deletes the folder (after the finished matrix is registered). */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * The batches that extend the covered prefix, in order: each starts at or before the end of the
   * previous one and reaches past it (batches of an earlier run with another --batch may overlap).
   */
  private cover(tower: Tower): Batch[] {
    const used: Batch[] = [];
    let next = 0;
    for (const batch of this.batches[tower]) {
      if (batch.start > next) break;
      if (batch.start + batch.count <= next) continue;
      used.push(batch);
      next = batch.start + batch.count;
    }
    return used;
  }
}

/** The batch files of a tower, by start; temp files of an interrupted write do not match. */
function scan(dir: string, tower: Tower): Batch[] {
  const pattern = new RegExp(`^${tower}-(\\d{9})\\.npy$`);
  const batches: Batch[] = [];
  for (const name of readdirSync(dir)) {
    const match = pattern.exec(name);
    if (match === null) continue;
    const file = join(dir, name);
    batches.push({ start: Number(match[1]), count: readNpyShape(file).shape[0], file });
  }
  return batches.sort((a, b) => a.start - b.start);
}

/** Shape of an .npy file (reads the whole file; batches are small). */
function readNpyShape(file: string): { shape: number[] } {
  try {
    return { shape: readNpy(file).shape };
  } catch (error) {
    if (error instanceof LeverError) throw error;
    throw new LeverError(`unreadable partial batch (${(error as Error).message}); delete it to recompute`, { file });
  }
}
