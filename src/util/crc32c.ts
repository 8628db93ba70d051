/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing, and the
 * "masked" form TFRecord stores (a rotation plus a constant, so a CRC of data that itself holds CRCs
 * stays well distributed). Table-driven, one byte at a time: an event file's records are tens of bytes.
 * Checked against RFC 3720's test vectors in test/util/crc32c.test.ts.
 */

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C of the bytes, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: ((crc >>> 15) | (crc << 17)) + 0xa282ead8, modulo 2³². */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}
