import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { encodeNpy, readNpy, writeNpy } from "../../src/data/npy.js";

const dir = mkdtempSync(join(tmpdir(), "lever-npy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Builds a .npy file by hand: magic, version, length field, header text padded to `total` bytes, data. */
function handBuilt(major: 1 | 2 | 3, dict: string, data: Uint8Array, headerTotal = 128): Uint8Array {
  const lengthBytes = major === 1 ? 2 : 4;
  const prefix = 6 + 2 + lengthBytes;
  const text = `${dict}${" ".repeat(headerTotal - prefix - dict.length - 1)}\n`;
  const header = Buffer.from(text, major === 3 ? "utf8" : "latin1");
  const out = new Uint8Array(prefix + header.length + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0], 0);
  const view = new DataView(out.buffer);
  if (major === 1) view.setUint16(8, header.length, true);
  else view.setUint32(8, header.length, true);
  out.set(header, prefix);
  out.set(data, prefix + header.length);
  return out;
}

const f32 = (...values: number[]) => new Uint8Array(new Float32Array(values).buffer);

describe("readNpy", () => {
  it("reads a hand-built v1.0 float32 (2, 3) file", () => {
    const bytes = handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32(0, 1, 2, 3, 4, 5));
    const array = readNpy(bytes);
    expect(array.dtype).toBe("<f4");
    expect(array.shape).toEqual([2, 3]);
    expect(Array.from(array.data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(array.fortranOrder).toBe(false);
  });

  it("reads v2.0 (u32 header length) and v3.0 (utf-8 header) files", () => {
    const dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    const data = new Uint8Array(new Float64Array([1.5, -2]).buffer);
    for (const major of [2, 3] as const) {
      const array = readNpy(handBuilt(major, dict, data));
      expect(array.shape).toEqual([2]);
      expect(Array.from(array.data as Float64Array)).toEqual([1.5, -2]);
    }
  });

  it("accepts the 16-byte alignment of old numpy files and keys in any order", () => {
    const bytes = handBuilt(1, "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}", f32(7, 8, 9), 80);
    expect(Array.from(readNpy(bytes).data as Float32Array)).toEqual([7, 8, 9]);
  });

  it("widens <f2 to float32 using the IEEE half encoding", () => {
    // 0x3c00 = 1, 0xc000 = -2, 0x3555 ≈ 0.33325, 0x7c00 = +Inf, 0x0001 = 2^-24 (smallest subnormal)
    const halves = new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x3555, 0x7c00, 0x0001]).buffer);
    const array = readNpy(handBuilt(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", halves));
    expect(array.dtype).toBe("<f2");
    expect(array.data).toBeInstanceOf(Float32Array);
    expect(Array.from(array.data as Float32Array)).toEqual([1, -2, Math.fround(0.333251953125), Infinity, 2 ** -24]);
  });

  it("reads integer id arrays (|u1, <i4, <i8) into matching typed arrays", () => {
    const i8 = new Uint8Array(new BigInt64Array([5n, 9007199254740993n]).buffer);
    const a = readNpy(handBuilt(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", i8));
    expect(Array.from(a.data as BigInt64Array)).toEqual([5n, 9007199254740993n]);
    const i4 = new Uint8Array(new Int32Array([-1, 42]).buffer);
    expect(
      Array.from(
        readNpy(handBuilt(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", i4)).data as Int32Array,
      ),
    ).toEqual([-1, 42]);
    const u1 = readNpy(
      handBuilt(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", new Uint8Array([1, 2, 255])),
    );
    expect(Array.from(u1.data as Uint8Array)).toEqual([1, 2, 255]);
  });

  it("reads scalars and empty arrays", () => {
    expect(readNpy(handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f32(3))).shape).toEqual([]);
    const empty = readNpy(
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", new Uint8Array()),
    );
    expect(empty.shape).toEqual([0, 4]);
    expect(empty.data.length).toBe(0);
  });

  it("reads data at a misaligned byte offset inside a larger buffer", () => {
    const bytes = handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f32(1.25, -3));
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    expect(Array.from(readNpy(shifted.subarray(1)).data as Float32Array)).toEqual([1.25, -3]);
  });

  const bad: [string, Uint8Array, RegExp][] = [
    [
      "big-endian data",
      handBuilt(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", f32(1)),
      /field "descr": big-endian dtype '>f4'/,
    ],
    [
      "Fortran order",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f32(1, 2, 3, 4)),
      /field "fortran_order": Fortran-ordered/,
    ],
    [
      "an unsupported dtype",
      handBuilt(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f32(1, 2)),
      /unsupported dtype '<c8'/,
    ],
    [
      "too few data bytes",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32(1, 2)),
      /data is 8 bytes but shape \(2, 3\) of <f4 needs 24/,
    ],
    [
      "trailing data bytes",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32(1, 2)),
      /data is 8 bytes .* needs 4/,
    ],
    [
      "a one-element shape without a comma",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", f32(1)),
      /one-element shape must be written \(n,\)/,
    ],
    [
      "a missing key",
      handBuilt(1, "{'descr': '<f4', 'shape': (1,), }", f32(1)),
      /expected exactly descr, fortran_order, shape/,
    ],
    [
      "an extra key",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': True}", f32(1)),
      /header keys/,
    ],
    [
      "a negative dimension",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f32(1)),
      /non-negative integer/,
    ],
    [
      "a structured dtype",
      handBuilt(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", f32(1)),
      /malformed header/,
    ],
    ["no magic", new Uint8Array(64), /not a .npy file/],
    [
      "an unknown version",
      handBuilt(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32(1)).map((b, i) =>
        i === 6 ? 4 : b,
      ),
      /format version 4\.0/,
    ],
  ];
  for (const [what, bytes, message] of bad) {
    it(`rejects ${what} with a message naming the file`, () => {
      expect(() => readNpy(bytes, "emb.npy")).toThrow(message);
      expect(() => readNpy(bytes, "emb.npy")).toThrow(/^emb\.npy/);
    });
  }

  it("accepts Fortran order for a 1-D array, whose bytes equal C order", () => {
    const bytes = handBuilt(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", f32(1, 2, 3));
    expect(Array.from(readNpy(bytes).data as Float32Array)).toEqual([1, 2, 3]);
  });
});

describe("writeNpy", () => {
  it("writes the exact bytes numpy writes (header padded to 64, 21 growth spaces)", () => {
    const [header, data] = encodeNpy(new Float32Array([0, 1, 2, 3, 4, 5]), [2, 3]);
    // numpy 2.x: np.save of a (2, 3) float32 array has a 118-byte header → 128 bytes before the data.
    expect(header.length).toBe(128);
    const text = Buffer.from(header.subarray(10)).toString("latin1");
    expect(text).toBe(`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }${" ".repeat(58)}\n`);
    expect(Array.from(header.subarray(0, 10))).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 118, 0]);
    expect(data).toEqual(f32(0, 1, 2, 3, 4, 5));
  });

  it("round-trips every writable dtype through a file", () => {
    const cases = [
      { data: new Float32Array([1.5, -0, Number.NaN, 3e38]), shape: [2, 2] },
      { data: new Float64Array([Math.PI]), shape: [1] },
      { data: new Int32Array([-7, 7, 0]), shape: [3] },
      { data: new BigInt64Array([-1n, 123456789012345n]), shape: [2, 1] },
      { data: new Uint8Array([0, 255]), shape: [2] },
      { data: new Float32Array([]), shape: [0, 512] },
    ];
    for (const [i, { data, shape }] of cases.entries()) {
      const path = join(dir, `case${i}.npy`);
      writeNpy(path, data, shape);
      const back = readNpy(path);
      expect(back.shape).toEqual(shape);
      expect(back.data).toEqual(data);
    }
  });

  it("refuses a shape that does not match the data length", () => {
    expect(() => writeNpy(join(dir, "bad.npy"), new Float32Array(5), [2, 3])).toThrow(
      /holds 6 values but the data has 5/,
    );
  });

  it("reading a file from a path gives the same result as reading its bytes", () => {
    const path = join(dir, "same.npy");
    writeNpy(path, new Float32Array([1, 2, 3, 4, 5, 6]), [3, 2]);
    expect(readNpy(path)).toEqual(readNpy(readFileSync(path)));
  });
});

const hasNumpy = (() => {
  try {
    execFileSync("python3", ["-c", "import numpy"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasNumpy)("cross-check with numpy (skipped when python3 + numpy are missing)", () => {
  it("numpy reads what we write and we read what numpy writes, byte-identical headers", () => {
    const ours = join(dir, "ours.npy");
    writeNpy(ours, new Float32Array([0.5, -1, 2, 4, 8, 16]), [2, 3]);
    const theirs = join(dir, "theirs.npy");
    const script = [
      "import numpy as np, sys",
      "a = np.load(sys.argv[1]); assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)",
      "assert a.tolist() == [[0.5, -1, 2], [4, 8, 16]], a.tolist()",
      "np.save(sys.argv[2], a)",
      "np.save(sys.argv[2] + '.f2.npy', np.array([1, -2, 65504, 6e-8], dtype='<f2'))",
    ].join("\n");
    execFileSync("python3", ["-c", script, ours, theirs]);
    expect(readFileSync(theirs)).toEqual(readFileSync(ours));
    expect(Array.from(readNpy(`${theirs}.f2.npy`).data as Float32Array)).toEqual([1, -2, 65504, 2 ** -24]);
  });

  it("a numpy v2.0 file (forced version) reads correctly", () => {
    const path = join(dir, "v2.npy");
    writeFileSync(
      join(dir, "v2.py"),
      "import numpy as np, sys\nnp.lib.format.write_array(open(sys.argv[1], 'wb'), np.arange(4, dtype='<f8'), version=(2, 0))\n",
    );
    execFileSync("python3", [join(dir, "v2.py"), path]);
    expect(readFileSync(path)[6]).toBe(2);
    expect(Array.from(readNpy(path).data as Float64Array)).toEqual([0, 1, 2, 3]);
  });
});
