import { describe, expect, it } from "vitest";
import {
  bfloat16ToFloat32,
  float16ToFloat32,
  float32ToBfloat16,
  float32ToFloat16,
  halfBitsToNumber,
  numberToBfloat16Bits,
  numberToHalfBits,
} from "../../src/data/float16.js";

describe("binary16", () => {
  it("decodes the published reference values of IEEE 754 half precision", () => {
    // Wikipedia "Half-precision floating-point format", exponent/fraction examples.
    const cases: [number, number][] = [
      [0x0000, 0],
      [0x0001, 2 ** -24], // smallest positive subnormal ≈ 5.96e-8
      [0x03ff, 1023 * 2 ** -24], // largest subnormal ≈ 6.0976e-5
      [0x0400, 2 ** -14], // smallest positive normal
      [0x3555, 0.333251953125],
      [0x3bff, 0.99951171875],
      [0x3c00, 1],
      [0x3c01, 1.0009765625],
      [0x7bff, 65504], // largest normal
      [0xc000, -2],
      [0x7c00, Infinity],
      [0xfc00, -Infinity],
    ];
    for (const [bits, value] of cases) {
      expect(halfBitsToNumber(bits)).toBe(value);
    }
    expect(Object.is(halfBitsToNumber(0x8000), -0)).toBe(true);
    expect(halfBitsToNumber(0x7e00)).toBeNaN();
  });

  it("encode∘decode is the identity on every non-NaN half bit pattern", () => {
    const mismatches: number[] = [];
    for (let h = 0; h < 65536; h++) {
      const isNanPattern = ((h >> 10) & 0x1f) === 31 && (h & 0x3ff) !== 0;
      if (!isNanPattern && numberToHalfBits(halfBitsToNumber(h)) !== h) mismatches.push(h);
    }
    expect(mismatches).toEqual([]);
  });

  it("rounds to nearest, ties to even, and overflows to infinity", () => {
    const ulpAt1 = 2 ** -10;
    expect(numberToHalfBits(1 + ulpAt1 / 2)).toBe(0x3c00); // tie → even (1.0)
    expect(numberToHalfBits(1 + (3 * ulpAt1) / 2)).toBe(0x3c02); // tie → even (1 + 2ulp)
    expect(numberToHalfBits(1 + ulpAt1 * 0.51)).toBe(0x3c01);
    expect(numberToHalfBits(65520)).toBe(0x7c00); // halfway to 2^16 rounds up to Inf
    expect(numberToHalfBits(65519)).toBe(0x7bff);
    expect(numberToHalfBits(2 ** -25)).toBe(0x0000); // tie between 0 and the smallest subnormal → 0
    expect(numberToHalfBits(2 ** -25 * 1.5)).toBe(0x0001);
    expect(numberToHalfBits(-1e-10)).toBe(0x8000);
    expect(numberToHalfBits(Number.NaN) & 0x7c00).toBe(0x7c00);
    expect(numberToHalfBits(Number.NaN) & 0x3ff).not.toBe(0);
  });

  it("vector helpers agree with the scalar ones", () => {
    const values = [0.1, -7.25, 1e5, 3e-6];
    const bits = float32ToFloat16(values);
    expect(Array.from(bits)).toEqual(values.map(numberToHalfBits));
    expect(Array.from(float16ToFloat32(bits))).toEqual(Array.from(bits).map((b) => Math.fround(halfBitsToNumber(b))));
  });
});

describe("bfloat16", () => {
  it("is the top 16 bits of float32, rounded to nearest even", () => {
    expect(numberToBfloat16Bits(1)).toBe(0x3f80);
    expect(numberToBfloat16Bits(-2)).toBe(0xc000);
    expect(numberToBfloat16Bits(Math.PI)).toBe(0x4049); // 3.140625
    // 1 + 2^-8 is exactly halfway between 1 (0x3f80) and 1 + 2^-7 (0x3f81) → even 0x3f80.
    expect(numberToBfloat16Bits(1 + 2 ** -8)).toBe(0x3f80);
    expect(numberToBfloat16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(numberToBfloat16Bits(Infinity)).toBe(0x7f80);
    expect(bfloat16ToFloat32(new Uint16Array([0x4049]))[0]).toBe(3.140625);
    expect(bfloat16ToFloat32(float32ToBfloat16([Number.NaN]))[0]).toBeNaN();
  });
});
