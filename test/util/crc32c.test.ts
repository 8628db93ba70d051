import { describe, expect, it } from "vitest";
import { crc32c, maskedCrc32c } from "../../src/util/crc32c.js";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("crc32c", () => {
  it("matches RFC 3720's test vectors (B.4) and the check value of '123456789'", () => {
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
    expect(crc32c(bytes("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array())).toBe(0);
  });

  it("masks as TFRecord does: rotate right by 15, add 0xa282ead8", () => {
    // crc32c("") = 0 → mask = 0xa282ead8; crc32c("123456789") = 0xe3069283 rotated right 15 = 0x2507c60d.
    expect(maskedCrc32c(new Uint8Array())).toBe(0xa282ead8);
    expect(maskedCrc32c(bytes("123456789"))).toBe((0x2507c60d + 0xa282ead8) >>> 0);
  });
});
