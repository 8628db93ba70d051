import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { firstInvalidUtf8, readJsonFile, readTextFile } from "../../src/util/files.js";
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
