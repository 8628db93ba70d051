import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  cosine,
  firstNonFinite,
  normalizeRows,
  readEmbeddingFile,
  rowNorms,
  validateEmbedding,
} from "../../src/data/embeddings.js";
import type { VqaItem } from "../../src/data/item.js";
import { readNpy, writeNpy } from "../../src/data/npy.js";
import { writeSafetensors } from "../../src/data/safetensors.js";
import { importEmbedding, loadDatasetEmbedding } from "../../src/store/ingest/embeddings.js";
import { Workspace } from "../../src/store/workspace.js";
import { sha256 } from "../../src/util/hash.js";

function item(id: number): VqaItem {
  return {
    questionId: String(id),
    imageId: String(1000 + id),
    question: `q${id}?`,
    answers: [{ answer: "a" }],
    answer: "a",
    questionType: "what",
    answerType: "other",
    imagePath: null,
  };
}

let dir: string;
let ws: Workspace;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-emb-"));
  ws = Workspace.open(join(dir, "ws"));
  // Question ids 10, 20, 30, 40 (question-id order = dataset order).
  ws.putDataset({ name: "toy", split: "train", source: "synth", files: [] }, [40, 10, 30, 20].map(item));
});
afterEach(() => {
  ws.close();
  rmSync(dir, { recursive: true, force: true });
});

/** 3 rows × 2: (3,4) norm 5, (0,2) norm 2, (1,0) norm 1. */
const rows3 = () => new Float32Array([3, 4, 0, 2, 1, 0]);

function npyWithIds(name: string, data: Float32Array, shape: number[], ids: unknown[]): string {
  const path = join(dir, `${name}.npy`);
  writeNpy(path, data, shape);
  writeFileSync(join(dir, `${name}.ids.json`), JSON.stringify(ids));
  return path;
}

describe("readEmbeddingFile", () => {
  it("reads .npy + <stem>.ids.json, turning numeric ids into strings", () => {
    const path = npyWithIds("e", rows3(), [3, 2], [30, "10", 20]);
    const { matrix, sourceDtype } = readEmbeddingFile(path);
    expect(matrix.ids).toEqual(["30", "10", "20"]);
    expect(matrix.dim).toBe(2);
    expect(Array.from(matrix.data)).toEqual([3, 4, 0, 2, 1, 0]);
    expect(sourceDtype).toBe("<f4");
  });

  it("also finds <file>.npy.ids.json, and --ids overrides the sidecar", () => {
    const path = join(dir, "x.npy");
    writeNpy(path, rows3(), [3, 2]);
    writeFileSync(`${path}.ids.json`, JSON.stringify([1, 2, 3]));
    expect(readEmbeddingFile(path).matrix.ids).toEqual(["1", "2", "3"]);
    writeFileSync(join(dir, "other.json"), JSON.stringify(["a", "b", "c"]));
    expect(readEmbeddingFile(path, { idsFile: join(dir, "other.json") }).matrix.ids).toEqual(["a", "b", "c"]);
  });

  it("reads a .safetensors tensor named embeddings with ids in the metadata, converting F64 to float32", () => {
    const path = join(dir, "e.safetensors");
    writeSafetensors(
      path,
      {
        embeddings: { dtype: "F64", shape: [2, 2], data: new Float64Array([0.1, 0.2, 0.3, 0.4]) },
        other: { dtype: "F32", shape: [1], data: new Float32Array([9]) },
      },
      { ids: JSON.stringify([10, 20]) },
    );
    const { matrix, sourceDtype } = readEmbeddingFile(path);
    expect(sourceDtype).toBe("F64");
    expect(matrix.ids).toEqual(["10", "20"]);
    expect(matrix.data).toEqual(new Float32Array([0.1, 0.2, 0.3, 0.4]));
  });

  it("maps rows to dataset order when asked (Lever-Plus exports: row k = k-th item by question id)", () => {
    const path = join(dir, "lp.npy");
    writeNpy(path, new Float32Array(8).fill(1), [4, 2]);
    expect(readEmbeddingFile(path, { datasetOrder: ["10", "20", "30", "40"] }).matrix.ids).toEqual([
      "10",
      "20",
      "30",
      "40",
    ]);
    expect(() => readEmbeddingFile(path, { datasetOrder: ["10", "20"] })).toThrow(
      /has 4 rows but the dataset has 2 items/,
    );
  });

  const failures: [string, () => string, RegExp][] = [
    [
      "a 1-D array",
      () => npyWithIds("d1", new Float32Array(3), [3], [1, 2, 3]),
      /field "shape": must be 2-D \(rows × dim\), got shape \[3\]/,
    ],
    ["zero rows", () => npyWithIds("d0", new Float32Array(0), [0, 4], []), /field "shape": has zero rows/],
    [
      "integer data",
      () => {
        const p = join(dir, "int.npy");
        writeNpy(p, new Int32Array(4), [2, 2]);
        writeFileSync(join(dir, "int.ids.json"), "[1,2]");
        return p;
      },
      /field "dtype": embeddings must be floating point .* got <i4/,
    ],
    ["rows ≠ ids", () => npyWithIds("n", rows3(), [3, 2], [1, 2]), /has 3 rows but 2 ids/],
    [
      "ids that are not a list of ids",
      () => npyWithIds("bad", rows3(), [3, 2], [1, null, 3]),
      /bad\.ids\.json, record "1": ids must be a JSON array of question ids/,
    ],
    [
      "no ids at all",
      () => {
        const p = join(dir, "noids.npy");
        writeNpy(p, rows3(), [3, 2]);
        return p;
      },
      /no row ids: put them in .*noids\.ids\.json/,
    ],
    [
      "an unknown extension",
      () => {
        const p = join(dir, "e.pt");
        writeFileSync(p, "x");
        return p;
      },
      /unsupported embedding file type/,
    ],
    [
      "a safetensors file with several tensors and none named embeddings",
      () => {
        const p = join(dir, "many.safetensors");
        writeSafetensors(p, {
          a: { dtype: "F32", shape: [1, 1], data: new Float32Array(1) },
          b: { dtype: "F32", shape: [1, 1], data: new Float32Array(1) },
        });
        return p;
      },
      /expected a tensor named "embeddings" or exactly one tensor, found 2: a, b/,
    ],
  ];
  for (const [what, make, message] of failures) {
    it(`rejects ${what}`, () => {
      const path = make();
      expect(() => readEmbeddingFile(path)).toThrow(message);
    });
  }
});

describe("validateEmbedding", () => {
  it("reports min/max/mean row norms (hand-computed 5, 2, 1 → min 1, max 5, mean 8/3) and dataset coverage", () => {
    const report = validateEmbedding({ ids: ["10", "20", "30"], dim: 2, data: rows3() }, "e.npy", [
      "10",
      "20",
      "30",
      "40",
    ]);
    expect(report.norms).toEqual({ min: 1, max: 5, mean: 8 / 3 });
    expect(report).toMatchObject({ rows: 3, dim: 2, missingFromMatrix: 1, datasetItems: 4 });
  });

  it("names the first NaN/Inf by row id, row number and column", () => {
    const data = rows3();
    data[3] = Number.POSITIVE_INFINITY;
    expect(() => validateEmbedding({ ids: ["10", "20", "30"], dim: 2, data }, "e.npy")).toThrow(
      'e.npy, record "20", field "row 1": value Infinity at column 1 is not finite',
    );
    data[0] = Number.NaN;
    expect(() => validateEmbedding({ ids: ["10", "20", "30"], dim: 2, data }, "e.npy")).toThrow(
      /record "10", field "row 0": value NaN at column 0/,
    );
  });

  it("rejects duplicate ids with both row numbers", () => {
    expect(() => validateEmbedding({ ids: ["10", "20", "10"], dim: 2, data: rows3() }, "e.npy")).toThrow(
      /record "10", field "ids": id "10" appears at rows 0 and 2/,
    );
  });

  it("rejects ids outside the dataset with the count and the first examples", () => {
    expect(() => validateEmbedding({ ids: ["10", "99", "98"], dim: 2, data: rows3() }, "e.npy", ["10", "20"])).toThrow(
      'e.npy, field "ids": 2 of 3 ids are not in the dataset (first: "99", "98")',
    );
  });

  it("rejects an all-zero row", () => {
    const data = rows3();
    data[4] = 0;
    expect(() => validateEmbedding({ ids: ["10", "20", "30"], dim: 2, data }, "e.npy")).toThrow(
      /record "30", field "row 2": row is all zeros/,
    );
  });
});

describe("row math", () => {
  it("normalizeRows gives unit rows in the same direction", () => {
    const data = rows3();
    normalizeRows(data, 2);
    expect(Array.from(data)).toEqual([0.6, 0.8, 0, 1, 1, 0].map(Math.fround));
    expect(Array.from(rowNorms(data, 2)).every((n) => Math.abs(n - 1) < 1e-6)).toBe(true);
  });

  it("cosine is the normalised dot product of rows of any length, and 0 for a zero row", () => {
    // (3, 4)·(4, −3) = 0; (3, 4)·(6, 8) = 50 = 5·10; (3, 4)·(−3, −4) = −25.
    expect(cosine(new Float32Array([3, 4]), new Float32Array([4, -3]))).toBe(0);
    expect(cosine(new Float32Array([3, 4]), new Float32Array([6, 8]))).toBe(1);
    expect(cosine(new Float32Array([3, 4]), new Float32Array([-3, -4]))).toBe(-1);
    // (2, 2)·(5, 0) = 10 = (2√2·5)/√2.
    expect(cosine(new Float32Array([2, 2]), new Float32Array([5, 0]))).toBeCloseTo(Math.SQRT1_2, 15);
    expect(cosine(new Float32Array([0, 0]), new Float32Array([1, 2]))).toBe(0);
    expect(cosine(new Float32Array([1, 2]), new Float32Array([0, 0]))).toBe(0);
  });

  it("firstNonFinite finds NaN, +Inf and -Inf but not large finite values", () => {
    expect(firstNonFinite(new Float32Array([3e38, -3e38, 0]))).toBe(-1);
    expect(firstNonFinite(new Float32Array([1, -Infinity]))).toBe(1);
    expect(firstNonFinite(new Float32Array([Number.NaN]))).toBe(0);
  });
});

describe("importEmbedding + loadDatasetEmbedding", () => {
  it("stores canonical .npy + .ids.json under artifacts/embeddings/<dataset>/<kind>, registers it, and loads it back", () => {
    const path = npyWithIds("img", rows3(), [3, 2], [30, 10, 20]);
    const result = importEmbedding(ws, { file: path, dataset: "toy", kind: "image", normalize: true });
    expect(result).toMatchObject({
      path: "embeddings/toy/image.npy",
      idsPath: "embeddings/toy/image.ids.json",
      rows: 3,
      dim: 2,
      normalized: true,
      missingFromMatrix: 1,
    });
    expect(result.norms.max).toBe(5);
    const stored = ws.artifactPath("embeddings/toy/image.npy");
    expect(sha256(readFileSync(stored))).toBe(result.sha256);
    expect(readNpy(stored).dtype).toBe("<f4");
    expect(JSON.parse(readFileSync(ws.artifactPath("embeddings/toy/image.ids.json"), "utf8"))).toEqual([
      "30",
      "10",
      "20",
    ]);
    const record = ws.getEmbedding("toy", "image")!;
    expect(record).toMatchObject({ rows: 3, dim: 2, dtype: "float32", sha256: result.sha256 });
    expect((record.details as { source: { sha256: string } }).source.sha256).toBe(sha256(readFileSync(path)));

    const loaded = loadDatasetEmbedding(ws, "toy", "image");
    expect(loaded.ids).toEqual(["30", "10", "20"]);
    expect(Array.from(loaded.data)).toEqual([0.6, 0.8, 0, 1, 1, 0].map(Math.fround));
  });

  it("keeps the source values when not normalising", () => {
    importEmbedding(ws, { file: npyWithIds("t", rows3(), [3, 2], [10, 20, 30]), dataset: "toy", kind: "text" });
    expect(Array.from(loadDatasetEmbedding(ws, "toy", "text").data)).toEqual([3, 4, 0, 2, 1, 0]);
  });

  it("registers nothing when a check fails", () => {
    const path = npyWithIds("bad", rows3(), [3, 2], [10, 20, 77]);
    expect(() => importEmbedding(ws, { file: path, dataset: "toy", kind: "joint" })).toThrow(
      /1 of 3 ids are not in the dataset \(first: "77"\)/,
    );
    expect(ws.getEmbedding("toy", "joint")).toBeUndefined();
  });

  it("refuses an unknown dataset or kind, and explains how to import a missing embedding", () => {
    const path = npyWithIds("k", rows3(), [3, 2], [10, 20, 30]);
    expect(() => importEmbedding(ws, { file: path, dataset: "nope", kind: "joint" })).toThrow(/nope/);
    expect(() => importEmbedding(ws, { file: path, dataset: "toy", kind: "audio" as "joint" })).toThrow(
      /kind must be one of image, text, joint/,
    );
    expect(() => loadDatasetEmbedding(ws, "toy", "joint")).toThrow(
      /lever embed import FILE --dataset toy --kind joint/,
    );
  });

  it("detects a stored file that no longer matches its record", () => {
    importEmbedding(ws, { file: npyWithIds("j", rows3(), [3, 2], [10, 20, 30]), dataset: "toy", kind: "joint" });
    writeNpy(ws.artifactPath("embeddings/toy/joint.npy"), new Float32Array(4), [2, 2]);
    expect(() => loadDatasetEmbedding(ws, "toy", "joint")).toThrow(
      /holds <f4 \[2, 2\] but the workspace recorded float32 \[3, 2\]/,
    );
  });
});
