import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeFileAtomic } from "../../src/util/atomic.js";
import { leverErrorOf } from "../helpers/errors.js";

const dir = mkdtempSync(join(tmpdir(), "lever-atomic-"));

describe("writeFileAtomic", () => {
  it("replaces the content in one step", () => {
    const path = join(dir, "a.txt");
    writeFileSync(path, "old");
    writeFileAtomic(path, [Buffer.from("ne"), Buffer.from("w")]);
    expect(readFileSync(path, "utf8")).toBe("new");
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });

  it("fails with one line naming the target, and leaves no temp file, when the target is a directory", () => {
    const target = join(dir, "out");
    mkdirSync(target);
    const error = leverErrorOf(() => writeFileAtomic(target, "data"));
    expect(error.message).toBe(`${target}: is a directory, not a file (EISDIR)`);
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });

  it("fails with one line when a parent is a file, creating nothing", () => {
    const file = join(dir, "plain");
    writeFileSync(file, "x");
    expect(leverErrorOf(() => writeFileAtomic(join(file, "child.json"), "{}")).message).toMatch(
      /plain\/child\.json: (a parent of this path is not a directory \(ENOTDIR\)|already exists \(EEXIST\))/,
    );
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });
});
