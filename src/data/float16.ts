/**
 * IEEE 754 half precision (binary16) and bfloat16 ⇄ float32 conversions for .npy `<f2` and
 * safetensors F16/BF16. Narrowing rounds to nearest, ties to even, as numpy and PyTorch do.
 */

let halfTable: Float32Array | null = null;

/** All 65,536 half values as float32, built once (256 KiB) so widening is one lookup per value. */
function table(): Float32Array {
  if (halfTable !== null) return halfTable;
  halfTable = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) halfTable[h] = halfBitsToNumber(h);
  return halfTable;
}

/** The value of one binary16 bit pattern: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
export function halfBitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // zero and subnormals
  if (exponent === 31) return fraction === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

export function float16ToFloat32(bits: Uint16Array): Float32Array {
  const lookup = table();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = lookup[bits[i]];
  return out;
}

export function bfloat16ToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const outBits = new Uint32Array(out.buffer);
  // bfloat16 is the top half of a float32.
  for (let i = 0; i < bits.length; i++) outBits[i] = bits[i] << 16;
  return out;
}

const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** float32 → binary16 bits, round to nearest even; overflow → ±Inf, NaN stays NaN. */
export function numberToHalfBits(value: number): number {
  scratch[0] = value;
  const x = scratchBits[0];
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  const mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-1 mantissa right, rounding to nearest even.
    if (e < -10) return sign;
    const m = mantissa | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let result = m >>> shift;
    if (rest > half || (rest === half && (result & 1) === 1)) result++;
    return sign | result;
  }
  let result = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (and reaches Inf at the top).
  if (rest > 0x1000 || (rest === 0x1000 && (result & 1) === 1)) result++;
  return sign | result;
}

/** float32 → bfloat16 bits, round to nearest even; NaN stays a quiet NaN. */
export function numberToBfloat16Bits(value: number): number {
  scratch[0] = value;
  const x = scratchBits[0];
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) return ((x >>> 16) | 0x40) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

export function float32ToFloat16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = numberToHalfBits(values[i]);
  return out;
}

export function float32ToBfloat16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = numberToBfloat16Bits(values[i]);
  return out;
}
