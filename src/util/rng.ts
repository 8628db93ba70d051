/**
 * Seeded pseudo-random numbers. Every random choice in lever goes through `Rng` (Math.random is
 * forbidden in src/ by a test). xoshiro128** (Blackman & Vigna) seeded through splitmix32, with
 * named child streams so adding a draw in one stage never shifts the draws of another.
 */
function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** FNV-1a over the UTF-16 code units of a string: stable stream names → 32-bit salts. */
function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export class Rng {
  /** xoshiro128** state; a Uint32Array keeps every step in unboxed 32-bit arithmetic (≈10× faster). */
  private readonly s = new Uint32Array(4);
  private spareNormal: number | null = null;

  constructor(readonly seed: number) {
    const next = splitmix32(seed >>> 0);
    const s = this.s;
    for (let i = 0; i < 4; i++) s[i] = next();
    if ((s[0] | s[1] | s[2] | s[3]) === 0) s[0] = 1;
  }

  /** An independent generator for a named sub-task, derived from this generator's seed only. */
  child(name: string | number): Rng {
    const salt = hashString(String(name));
    return new Rng((Math.imul(this.seed ^ 0x5bd1e995, 0x27d4eb2d) ^ salt) >>> 0);
  }

  /** Uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const s = this.s;
    const x = Math.imul(s[1], 5);
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >>> 21);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  next(): number {
    const hi = this.nextUint32() >>> 5; // 27 bits
    const lo = this.nextUint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n). Unbiased (rejection sampling). */
  int(n: number): number {
    if (!(n >= 1) || n > 0x100000000 || !Number.isInteger(n)) throw new RangeError(`Rng.int: bad bound ${n}`);
    const limit = 0x100000000 - (0x100000000 % n);
    for (;;) {
      const x = this.nextUint32();
      if (x < limit) return x % n;
    }
  }

  /** Standard normal (Marsaglia polar method). */
  normal(): number {
    if (this.spareNormal !== null) {
      const v = this.spareNormal;
      this.spareNormal = null;
      return v;
    }
    for (;;) {
      const u = 2 * this.next() - 1;
      const v = 2 * this.next() - 1;
      const s = u * u + v * v;
      if (s > 0 && s < 1) {
        const m = Math.sqrt((-2 * Math.log(s)) / s);
        this.spareNormal = v * m;
        return u * m;
      }
    }
  }

  /** Fisher–Yates shuffle in place; returns the array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i];
      items[i] = items[j];
      items[j] = tmp;
    }
    return items;
  }

  /** k distinct integers from [0, n), in draw order (Floyd's algorithm when k ≪ n). */
  sampleWithoutReplacement(n: number, k: number): number[] {
    if (k > n) throw new RangeError(`Rng.sampleWithoutReplacement: k=${k} > n=${n}`);
    if (k * 4 > n) return this.shuffle(Array.from({ length: n }, (_, i) => i)).slice(0, k);
    const chosen = new Set<number>();
    const order: number[] = [];
    while (order.length < k) {
      const x = this.int(n);
      if (!chosen.has(x)) {
        chosen.add(x);
        order.push(x);
      }
    }
    return order;
  }

  /** Index drawn from unnormalised non-negative weights. */
  categorical(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) total += weights[i];
    if (!(total > 0)) throw new RangeError("Rng.categorical: weights sum to zero");
    let u = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i];
      if (u < 0) return i;
    }
    return weights.length - 1;
  }
}
