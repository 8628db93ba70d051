import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  encodeSafetensors,
  openSafetensors,
  readSafetensors,
  type TensorToWrite,
  writeSafetensors,
} from "../../src/data/safetensors.js";

const dir = mkdtempSync(join(tmpdir(), "lever-st-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const concat = (chunks: Uint8Array[]) => new Uint8Array(Buffer.concat(chunks));

/** A file from a header object (serialised as given) and raw data bytes. */
function build(header: unknown, data: Uint8Array, pad = true): Uint8Array {
  let json = JSON.stringify(header);
  if (pad) json += " ".repeat((8 - (json.length % 8)) % 8);
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(Buffer.byteLength(json)), true);
  return concat([prefix, Buffer.from(json), data]);
}

const f32bytes = (...v: number[]) => new Uint8Array(new Float32Array(v).buffer);

describe("writeSafetensors matches the reference serializer byte for byte", () => {
  // Test vectors from huggingface/safetensors, safetensors/src/tensor.rs (tests test_serialization,
  // test_serialization_forced_alignement, test_empty).
  it("one F32 tensor [1, 2, 3] named attn.0 (header needs no padding)", () => {
    const out = concat(
      encodeSafetensors({ "attn.0": { dtype: "F32", shape: [1, 2, 3], data: new Float32Array([0, 1, 2, 3, 4, 5]) } }),
    );
    // biome-ignore format: published byte vector
    expect(Array.from(out)).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
      116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
      58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
      101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
      0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ]);
  });

  it("one F32 tensor [1, 1, 2, 3] named attn0 (header padded with 7 spaces)", () => {
    const out = concat(
      encodeSafetensors({ attn0: { dtype: "F32", shape: [1, 1, 2, 3], data: new Float32Array([0, 1, 2, 3, 4, 5]) } }),
    );
    // biome-ignore format: published byte vector
    expect(Array.from(out)).toEqual([
      72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
      121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
      91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
      115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
      32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
      160, 64,
    ]);
  });

  it("no tensors, with and without metadata", () => {
    expect(Array.from(concat(encodeSafetensors({})))).toEqual([
      8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32,
    ]);
    // biome-ignore format: published byte vector
    expect(Array.from(concat(encodeSafetensors({}, { framework: "pt" })))).toEqual([
      40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
      95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
      116, 34, 125, 125, 32, 32, 32, 32, 32,
    ]);
  });

  it("orders tensors by descending dtype alignment, then by name, with contiguous offsets", () => {
    const tensors: Record<string, TensorToWrite> = {
      b_f32: { dtype: "F32", shape: [1], data: new Float32Array([1]) },
      a_u8: { dtype: "U8", shape: [3], data: new Uint8Array([1, 2, 3]) },
      z_f64: { dtype: "F64", shape: [1], data: new Float64Array([2]) },
      a_f32: { dtype: "F32", shape: [2], data: new Float32Array([3, 4]) },
      c_i64: { dtype: "I64", shape: [1], data: new BigInt64Array([5n]) },
      d_f16: { dtype: "F16", shape: [1], data: new Float32Array([0.5]) },
    };
    const [, header] = encodeSafetensors(tensors);
    const parsed = JSON.parse(Buffer.from(header).toString());
    expect(Object.keys(parsed)).toEqual(["c_i64", "z_f64", "a_f32", "b_f32", "d_f16", "a_u8"]);
    expect(Object.values(parsed).map((t) => (t as { data_offsets: number[] }).data_offsets)).toEqual([
      [0, 8],
      [8, 16],
      [16, 24],
      [24, 28],
      [28, 30],
      [30, 33],
    ]);
  });
});

describe("readSafetensors", () => {
  it("reads the published attn.0 file and its metadata", () => {
    const bytes = build(
      { __metadata__: { format: "pt" }, "attn.0": { dtype: "F32", shape: [1, 2, 3], data_offsets: [0, 24] } },
      f32bytes(0, 1, 2, 3, 4, 5),
    );
    const file = readSafetensors(bytes);
    expect(file.metadata).toEqual({ format: "pt" });
    const t = file.tensors.get("attn.0")!;
    expect(t.dtype).toBe("F32");
    expect(t.shape).toEqual([1, 2, 3]);
    expect(Array.from(t.data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("widens F16 and BF16 to Float32Array and keeps F64 as Float64Array", () => {
    const data = concat([
      new Uint8Array(new Float64Array([Math.E]).buffer),
      new Uint8Array(new Uint16Array([0x3c00, 0xc000]).buffer),
      new Uint8Array(new Uint16Array([0x4049]).buffer),
    ]);
    const file = readSafetensors(
      build(
        {
          e: { dtype: "F64", shape: [], data_offsets: [0, 8] },
          h: { dtype: "F16", shape: [2], data_offsets: [8, 12] },
          b: { dtype: "BF16", shape: [1], data_offsets: [12, 14] },
        },
        data,
      ),
    );
    expect(file.tensors.get("e")!.data).toEqual(new Float64Array([Math.E]));
    expect(file.tensors.get("h")!.data).toEqual(new Float32Array([1, -2]));
    expect(file.tensors.get("h")!.dtype).toBe("F16");
    expect(file.tensors.get("b")!.data).toEqual(new Float32Array([3.140625]));
  });

  it("accepts tensors listed in any order in the header and returns them in offset order", () => {
    const bytes = build(
      {
        second: { dtype: "F32", shape: [1], data_offsets: [4, 8] },
        first: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
      },
      f32bytes(1, 2),
    );
    const file = readSafetensors(bytes);
    expect([...file.tensors.keys()]).toEqual(["first", "second"]);
    expect(file.tensors.get("second")!.data).toEqual(new Float32Array([2]));
  });

  const t = (begin: number, end: number, shape = [1]) => ({ dtype: "F32", shape, data_offsets: [begin, end] });
  const bad: [string, Uint8Array, RegExp][] = [
    ["a file shorter than 8 bytes", new Uint8Array(5), /too short for a safetensors header/],
    [
      "a header length past the end",
      build({}, new Uint8Array()).map((b, i) => (i === 0 ? 200 : b)),
      /runs past the end/,
    ],
    [
      "a header over 100 MB",
      (() => {
        const b = new Uint8Array(16);
        new DataView(b.buffer).setBigUint64(0, 1n << 40n, true);
        return b;
      })(),
      /exceeds the 100000000-byte limit/,
    ],
    [
      "invalid JSON",
      concat([new Uint8Array([8, 0, 0, 0, 0, 0, 0, 0]), Buffer.from("{oops   ")]),
      /header is not valid JSON/,
    ],
    ["a header that is not an object", build([1, 2], new Uint8Array()), /must be a JSON object/],
    [
      "a hole between tensors",
      build({ a: t(0, 4), b: t(8, 12) }, f32bytes(1, 2, 3)),
      /record "b", field "data_offsets": .* hole after byte 4/,
    ],
    ["overlapping tensors", build({ a: t(0, 8, [2]), b: t(4, 8) }, f32bytes(1, 2)), /overlapping/],
    [
      "offsets that disagree with the shape",
      build({ a: t(0, 8) }, f32bytes(1, 2)),
      /record "a", field "data_offsets": covers 8 bytes but shape \[1\] of F32 needs 4/,
    ],
    [
      "trailing bytes after the last tensor",
      build({ a: t(0, 4) }, f32bytes(1, 2)),
      /tensors cover 4 bytes but the file holds 8/,
    ],
    [
      "an unsupported dtype",
      build({ a: { dtype: "C64", shape: [1], data_offsets: [0, 8] } }, f32bytes(1, 2)),
      /record "a", field "dtype": unsupported dtype "C64"/,
    ],
    [
      "a non-string metadata value",
      build({ __metadata__: { n: 1 } }, new Uint8Array()),
      /field "__metadata__.n": value must be a string/,
    ],
    [
      "a negative dimension",
      build({ a: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, f32bytes(1)),
      /field "shape"/,
    ],
  ];
  for (const [what, bytes, message] of bad) {
    it(`rejects ${what}, naming the file`, () => {
      expect(() => readSafetensors(bytes, "w.safetensors")).toThrow(message);
      expect(() => readSafetensors(bytes, "w.safetensors")).toThrow(/^w\.safetensors/);
    });
  }
});

describe("round trips through files", () => {
  it("write → read reproduces every dtype, shape and the metadata; F16/BF16 hold the rounded values", () => {
    const path = join(dir, "all.safetensors");
    const tensors: Record<string, TensorToWrite> = {
      "layer.weight": { dtype: "F32", shape: [2, 3], data: new Float32Array([1, -2, 3.5, 0, 1e-30, 7]) },
      "layer.bias": { dtype: "F64", shape: [3], data: new Float64Array([0.1, 0.2, 0.3]) },
      half: { dtype: "F16", shape: [2], data: new Float32Array([0.1, 1000]) },
      brain: { dtype: "BF16", shape: [2], data: new Float32Array([0.1, 1000]) },
      step: { dtype: "I64", shape: [], data: new BigInt64Array([42n]) },
      ids: { dtype: "I32", shape: [2], data: new Int32Array([-5, 5]) },
      mask: { dtype: "BOOL", shape: [2], data: new Uint8Array([1, 0]) },
      empty: { dtype: "F32", shape: [0, 4], data: new Float32Array(0) },
    };
    writeSafetensors(path, tensors, { architecture: "pointer-v2", k: "64" });
    const file = readSafetensors(path);
    expect(file.metadata).toEqual({ architecture: "pointer-v2", k: "64" });
    for (const name of ["layer.weight", "layer.bias", "step", "ids", "mask", "empty"]) {
      expect(file.tensors.get(name)!.data).toEqual(tensors[name].data);
      expect(file.tensors.get(name)!.shape).toEqual(tensors[name].shape);
    }
    // 0.1 in binary16 is 0x2e66 = 0.0999755859375; 1000 is exact. bf16(0.1) = 0x3dcd = 0.10009765625; bf16(1000) = 1000.
    expect(Array.from(file.tensors.get("half")!.data as Float32Array)).toEqual([0.0999755859375, 1000]);
    expect(Array.from(file.tensors.get("brain")!.data as Float32Array)).toEqual([0.10009765625, 1000]);
    // The lazy reader sees the same tensors, and the file is exactly what encodeSafetensors produces.
    const reader = openSafetensors(path);
    expect(reader.names).toEqual([...file.tensors.keys()]);
    expect(reader.info("layer.weight")).toEqual({ dtype: "F32", shape: [2, 3] });
    expect(reader.read("layer.bias").data).toEqual(tensors["layer.bias"].data);
    expect(() => reader.read("nope")).toThrow(/no tensor named "nope"/);
    reader.close();
    expect(readFileSync(path)).toEqual(
      Buffer.concat(encodeSafetensors(tensors, { k: "64", architecture: "pointer-v2" })),
    );
  });

  it("refuses to write mismatched shapes, wrong array types and non-string metadata", () => {
    const path = join(dir, "bad.safetensors");
    expect(() => writeSafetensors(path, { a: { dtype: "F32", shape: [3], data: new Float32Array(2) } })).toThrow(
      /tensor "a": shape \[3\] holds 3 values, data has 2/,
    );
    expect(() => writeSafetensors(path, { a: { dtype: "F32", shape: [1], data: new Float64Array(1) } })).toThrow(
      /Float64Array cannot be written as F32/,
    );
    expect(() => writeSafetensors(path, {}, { n: 1 as unknown as string })).toThrow(/must be strings/);
  });

  it("reads a file where each tensor's data sits at an odd absolute offset (copies into aligned memory)", () => {
    // Unpadded header of odd length: the F32 data starts at a byte offset that is not a multiple of 4.
    const bytes = build({ a: { dtype: "F32", shape: [2], data_offsets: [0, 8] } }, f32bytes(1.5, 2.5), false);
    expect((bytes.length - 8) % 4).not.toBe(0);
    const path = join(dir, "odd.safetensors");
    writeFileSync(path, bytes);
    expect(readSafetensors(path).tensors.get("a")!.data).toEqual(new Float32Array([1.5, 2.5]));
    expect(readSafetensors(bytes).tensors.get("a")!.data).toEqual(new Float32Array([1.5, 2.5]));
  });
});
