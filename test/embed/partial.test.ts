import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PARTIAL_FORMAT, type PartialIdentity, PartialStore } from "../../src/embed/partial.js";

let dir: string;
beforeEach(() => {
  dir = join(mkdtempSync(join(tmpdir(), "lever-partial-")), ".partial-joint");
});
afterEach(() => rmSync(join(dir, ".."), { recursive: true, force: true }));

const identity = (model = "abc"): PartialIdentity => ({
  format: PARTIAL_FORMAT,
  dataset: "d",
  itemsHash: "h",
  kind: "joint",
  model: { "config.json": model },
  units: { image: { count: 10, sha256: "u" } },
  skipMissing: false,
});

/** Rows [count, 2] whose values are their unit numbers (start, start+1, …), so coverage is visible. */
const rows = (start: number, count: number) =>
  Float32Array.from({ length: count * 2 }, (_, i) => start + Math.floor(i / 2));

describe("PartialStore", () => {
  it("counts the gap-free prefix of batches and reads it back in unit order", () => {
    const store = PartialStore.open(dir, identity());
    expect(store.done("image")).toBe(0);
    store.writeBatch("image", 0, rows(0, 4), 2);
    store.writeBatch("image", 8, rows(8, 2), 2);
    expect(store.done("image")).toBe(4); // 4…7 missing: the batch at 8 waits
    store.writeBatch("image", 4, rows(4, 4), 2);
    expect(store.done("image")).toBe(10);
    expect(Array.from(store.readTower("image", 10).rows)).toEqual(Array.from(rows(0, 10)));
    expect(store.done("text")).toBe(0);
  });

  it("keeps batches for the same identity across opens and ignores temp files of an interrupted write", () => {
    PartialStore.open(dir, identity()).writeBatch("image", 0, rows(0, 3), 2);
    writeFileSync(join(dir, "image-000000003.npy.tmp-123-abc"), "half a file");
    const again = PartialStore.open(dir, identity());
    expect(again.discarded).toBe(false);
    expect(again.done("image")).toBe(3);
  });

  it("clears batches made for another identity", () => {
    PartialStore.open(dir, identity("abc")).writeBatch("image", 0, rows(0, 3), 2);
    const other = PartialStore.open(dir, identity("def"));
    expect(other.discarded).toBe(true);
    expect(other.done("image")).toBe(0);
    expect(readdirSync(dir)).toEqual(["state.json"]);
  });

  it("joins overlapping batches of runs with different batch sizes without double counting", () => {
    const store = PartialStore.open(dir, identity());
    store.writeBatch("image", 0, rows(0, 4), 2);
    store.writeBatch("image", 2, rows(2, 3), 2); // overlaps 2…3, extends to 5
    store.writeBatch("image", 3, rows(3, 1), 2); // inside what is covered: unused
    store.writeBatch("image", 5, rows(5, 5), 2);
    const reopened = PartialStore.open(dir, identity());
    expect(reopened.done("image")).toBe(10);
    expect(Array.from(reopened.readTower("image", 10).rows)).toEqual(Array.from(rows(0, 10)));
  });

  it("refuses to read an incomplete tower and removes its folder when done", () => {
    const store = PartialStore.open(dir, identity());
    store.writeBatch("image", 0, rows(0, 4), 2);
    expect(() => store.readTower("image", 10)).toThrow("partial results cover 4 of 10 image units");
    store.remove();
    expect(existsSync(dir)).toBe(false);
  });
});
