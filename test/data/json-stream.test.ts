import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lineColumnAt, streamJsonArrayField } from "../../src/data/json-stream.js";
import { LeverError } from "../../src/util/errors.js";
import { sha256 } from "../../src/util/hash.js";
import { Rng } from "../../src/util/rng.js";
import { leverErrorOf } from "../helpers/errors.js";

const dir = mkdtempSync(join(tmpdir(), "lever-json-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCounter = 0;
function file(text: string | Buffer): string {
  const path = join(dir, `f${fileCounter++}.json`);
  writeFileSync(path, text);
  return path;
}

function stream(path: string, field: string, chunkBytes?: number) {
  const elements: unknown[] = [];
  const result = streamJsonArrayField(
    path,
    field,
    (v, i) => {
      expect(i).toBe(elements.length);
      elements.push(v);
    },
    { chunkBytes },
  );
  return { elements, ...result };
}

/** Random JSON values with the awkward parts: escapes, brackets in strings, multi-byte characters. */
function randomValue(rng: Rng, depth: number): unknown {
  const pick = rng.int(depth > 2 ? 5 : 7);
  const pieces = ['"', "\\", "{", "}", "[", "]", ",", ":", "é", "漢", "😀", "a", " ", "\n", "\u0001"];
  switch (pick) {
    case 0:
      return rng.int(1_000_000) - 500_000;
    case 1:
      return rng.next() * 1e6;
    case 2:
      return [true, false, null][rng.int(3)];
    case 3:
    case 4:
      return Array.from({ length: rng.int(12) }, () => pieces[rng.int(pieces.length)]).join("");
    case 5:
      return Array.from({ length: rng.int(5) }, () => randomValue(rng, depth + 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = rng.int(5); i > 0; i--)
        out[`k${rng.int(100)}${pieces[rng.int(pieces.length)]}`] = randomValue(rng, depth + 1);
      return out;
    }
  }
}

describe("streamJsonArrayField", () => {
  it("yields exactly what JSON.parse gives for random documents, across any chunk boundary", () => {
    const rng = new Rng(11);
    for (let trial = 0; trial < 60; trial++) {
      const doc = {
        info: randomValue(rng, 0),
        items: Array.from({ length: rng.int(20) }, () => randomValue(rng, 0)),
        tail: randomValue(rng, 0),
      };
      const text = JSON.stringify(doc, null, trial % 3 === 0 ? 2 : undefined);
      const path = file(text);
      const got = stream(path, "items", 1 + rng.int(16));
      expect(got.elements).toEqual(doc.items);
      expect(got.others).toEqual({ info: doc.info, tail: doc.tail });
      expect(got.count).toBe(doc.items.length);
      expect(got.sha256).toBe(sha256(Buffer.from(text, "utf8")));
      expect(got.bytes).toBe(Buffer.byteLength(text));
    }
  });

  it("handles an empty array, a leading byte-order mark and surrounding whitespace", () => {
    expect(stream(file(' \n{ "a" : [ ] }\n'), "a").count).toBe(0);
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":[1,2]}')]);
    expect(stream(file(bom), "a", 2).elements).toEqual([1, 2]);
  });

  it("reports a syntax error inside an element with its exact byte offset, line and column", () => {
    const text = '{"data_type": "x",\n "annotations": [{"a": 1},\n  {"a": 2,}]}';
    const err = leverErrorOf(() => stream(file(text), "annotations", 5));
    const offset = text.indexOf(",}") + 1; // the "}" where a property name was expected
    expect(err.message).toContain(`at byte ${offset} (line 3, column ${offset - text.lastIndexOf("\n", offset)})`);
    expect(err.location.record).toBe("annotations[1]");
  });

  it("reports an unexpected token by the offset where its value starts", () => {
    const text = '{"q": [{"a": 1}, {"a": x}]}';
    const err = leverErrorOf(() => stream(file(text), "q"));
    expect(err.message).toContain(`in the value starting at byte ${text.indexOf('{"a": x')}`);
    expect(err.message).toContain("Unexpected token 'x'");
  });

  it("rejects structural mistakes outside the elements", () => {
    const cases: [string, RegExp][] = [
      ["[1, 2]", /expected a JSON object with a "q" array, found "\["/],
      ['{"q": [1, 2] "r": 1}', /expected "," or "}" after field "q"/],
      ['{"q": [1 2]}', /expected "," or "\]" after q\[0\]/],
      ['{"q": [1, 2]} x', /unexpected data after the end/],
      ['{"q": [{"a": 1}, {"a": ', /unexpected end of file/],
      ['{"q": {"a": 1}}', /field "q" must be an array/],
      ['{"q": [1], "q": [2]}', /field "q" appears twice/],
      ['{"q": [1, ]}', /q\[1\]/],
      ["", /expected a JSON object/],
    ];
    for (const [text, pattern] of cases) expect(leverErrorOf(() => stream(file(text), "q")).message).toMatch(pattern);
  });

  it("names the missing field and the fields that are present", () => {
    const err = leverErrorOf(() => stream(file('{"info": {}, "questions": []}'), "annotations"));
    expect(err.message).toMatch(
      /field "annotations": missing top-level array "annotations" \(fields present: info, questions\)/,
    );
  });

  it("reports a missing file as no such file", () => {
    expect(leverErrorOf(() => stream(join(dir, "absent.json"), "q")).message).toBe(
      `${join(dir, "absent.json")}: no such file (ENOENT)`,
    );
  });

  it("stops at the first element the callback rejects", () => {
    const seen: unknown[] = [];
    expect(() =>
      streamJsonArrayField(file('{"q": [1, 2, 3]}'), "q", (v) => {
        seen.push(v);
        if (v === 2) throw new LeverError("bad element");
      }),
    ).toThrow("bad element");
    expect(seen).toEqual([1, 2]);
  });
});

describe("lineColumnAt", () => {
  it("counts lines and columns from 1", () => {
    const path = file("ab\ncd\n\nef");
    expect(lineColumnAt(path, 0)).toEqual({ line: 1, column: 1 });
    expect(lineColumnAt(path, 4)).toEqual({ line: 2, column: 2 });
    expect(lineColumnAt(path, 7)).toEqual({ line: 4, column: 1 });
    expect(lineColumnAt(path, 8)).toEqual({ line: 4, column: 2 });
  });
});
