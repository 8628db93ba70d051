import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { portablePath } from "../../src/store/files.js";
import {
  firstInvalidUtf8,
  pathInside,
  readJsonFile,
  readTextFile,
  sqliteError,
  userError,
} from "../../src/util/files.js";
import { parseOrThrow } from "../../src/util/validate.js";
import { leverErrorOf } from "../helpers/errors.js";

const dir = mkdtempSync(join(tmpdir(), "lever-files-"));

describe("reading user files", () => {
  it("finds the first invalid UTF-8 byte (bad lead, truncated, overlong, surrogate)", () => {
    expect(firstInvalidUtf8(Buffer.from("héllo ✓ 𝄞"))).toBe(Buffer.from("héllo ✓ 𝄞").length);
    expect(firstInvalidUtf8(Uint8Array.from([0x61, 0xff, 0x61]))).toBe(1);
    expect(firstInvalidUtf8(Uint8Array.from([0x61, 0x62, 0xc3]))).toBe(2); // truncated 2-byte sequence
    expect(firstInvalidUtf8(Uint8Array.from([0xc0, 0x80]))).toBe(0); // overlong NUL
    expect(firstInvalidUtf8(Uint8Array.from([0x41, 0xe0, 0x80, 0x80]))).toBe(1); // overlong 3-byte
    expect(firstInvalidUtf8(Uint8Array.from([0xed, 0xa0, 0x80]))).toBe(0); // UTF-16 surrogate
  });

  it("names the file and the byte offset of non-UTF-8 input, and system errors in one line", () => {
    const latin1 = join(dir, "latin1.json");
    writeFileSync(latin1, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d])); // {"a":"é"} in Latin-1
    expect(leverErrorOf(() => readJsonFile(latin1)).message).toBe(
      `${latin1}: not valid UTF-8 (first bad byte at offset 6)`,
    );
    expect(leverErrorOf(() => readTextFile(dir)).message).toBe(`${dir}: is a directory, not a file (EISDIR)`);
    expect(leverErrorOf(() => readTextFile(join(dir, "absent"))).message).toMatch(/absent: no such file \(ENOENT\)/);
    const broken = join(dir, "broken.json");
    writeFileSync(broken, '{"a": ');
    expect(leverErrorOf(() => readJsonFile(broken)).message).toMatch(/broken\.json: not valid JSON/);
  });

  it("parseOrThrow locates the first issue by record and field", () => {
    const schema = z.object({ queries: z.record(z.string(), z.object({ beams: z.array(z.number()) })) });
    const error = leverErrorOf(() =>
      parseOrThrow(schema, { queries: { "42": { beams: [1, "x"] } } }, { file: "f.json", recordsAt: "queries" }),
    );
    expect(error.location).toEqual({ file: "f.json", record: "42", field: "beams[1]" });
    expect(parseOrThrow(schema, { queries: {} })).toEqual({ queries: {} });
  });
});

describe("system conditions as one line (userError, what the CLI prints)", () => {
  const errno = (code: string, extra: Record<string, string> = {}) =>
    Object.assign(new Error(`${code}: raw message`), { code, ...extra });

  it("names the path of permission denied, disk full and read-only disk errors", () => {
    expect(userError(errno("EACCES", { path: "/data/q.json" }))?.message).toBe(
      "/data/q.json: permission denied (EACCES)",
    );
    expect(userError(errno("ENOSPC", { path: "/ws/artifacts/x.npy" }))?.message).toBe(
      "/ws/artifacts/x.npy: no space left on the device (ENOSPC)",
    );
    // A failed rename names its destination, not the temp file.
    expect(userError(errno("EISDIR", { path: "/out/ckpt.tmp-1-a", dest: "/out/ckpt" }))?.message).toBe(
      "/out/ckpt: is a directory, not a file (EISDIR)",
    );
    expect(userError(errno("EROFS"))?.message).toBe("read-only file system (EROFS)");
  });

  it("turns a too-long string (a 600 MB input) into an error instead of a crash", () => {
    let tooLong: unknown;
    try {
      "x".repeat(2 ** 30); // V8's limit is 2^29 - 24 characters: the same RangeError a huge file hits
    } catch (error) {
      tooLong = error;
    }
    expect(tooLong).toBeInstanceOf(RangeError);
    expect(userError(tooLong)?.message).toMatch(/too large to hold in memory \(Invalid string length\)/);
    expect(userError(errno("ERR_STRING_TOO_LONG", { path: "/big.json" }))?.message).toBe(
      "/big.json: file is too large to hold as one string (over 512 MiB of text) (ERR_STRING_TOO_LONG)",
    );
  });

  it("says a locked, read-only or full database in words (real SQLite errors)", () => {
    const file = join(dir, "locked.db");
    const writer = new BetterSqlite3(file);
    writer.pragma("journal_mode = WAL");
    writer.exec("CREATE TABLE t (x)");
    const other = new BetterSqlite3(file);
    other.pragma("busy_timeout = 0");
    writer.exec("BEGIN IMMEDIATE");
    let busy: unknown;
    try {
      other.exec("INSERT INTO t VALUES (1)");
    } catch (error) {
      busy = error;
    }
    writer.exec("ROLLBACK");
    expect((busy as { code: string }).code).toBe("SQLITE_BUSY");
    expect(userError(busy)?.message).toMatch(/^the database is locked by another process .*\(SQLITE_BUSY\)$/);
    expect((sqliteError(busy, file) as Error).message).toMatch(/locked\.db: the database is locked/);
    const readOnly = new BetterSqlite3(file, { readonly: true });
    let denied: unknown;
    try {
      readOnly.exec("INSERT INTO t VALUES (1)");
    } catch (error) {
      denied = error;
    }
    expect(userError(denied)?.message).toMatch(/^the workspace is read-only .*\(SQLITE_READONLY\)$/);
    expect(userError(errno("SQLITE_FULL"))?.message).toMatch(/no space left on the device .*\(SQLITE_FULL\)/);
    for (const db of [writer, other, readOnly]) db.close();
  });

  it("leaves real bugs alone (they are shown with their stack)", () => {
    expect(userError(new TypeError("x is not a function"))).toBeUndefined();
    expect(userError(new RangeError("Rng.int: bad bound 0"))).toBeUndefined();
  });
});

describe("paths inside a folder (pathInside, the one containment check)", () => {
  it("gives the relative path strictly inside, null for the folder itself, a parent or a sibling", () => {
    expect(pathInside("/a/b", "/a/b/c/d.txt")).toBe(join("c", "d.txt"));
    expect(pathInside("/a/b", "/a/b/..hidden")).toBe("..hidden");
    for (const outside of ["/a/b", "/a", "/a/bc/d", "/x/y"]) expect(pathInside("/a/b", outside), outside).toBeNull();
  });

  it("keeps an artefact whose name starts with '..' relative to the artifacts folder (portablePath)", () => {
    expect(portablePath("/ws/artifacts", "/ws/artifacts/..cache/x.json")).toBe("..cache/x.json");
    expect(portablePath("/ws/artifacts", "/ws/other/x.json")).toBe("/ws/other/x.json");
  });
});
