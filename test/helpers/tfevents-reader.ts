/**
 * A tiny TensorBoard event-file reader for tests, written independently of src/data/tfevents.ts: it
 * checks each TFRecord's length and data CRCs with a bitwise CRC-32C (no table) and decodes the Event
 * protos with a generic protobuf wire-format walker, so an encoding mistake in the writer shows up here
 * (python3 with tensorboard is not on the test machines).
 */

/** Bitwise CRC-32C (reflected 0x82F63B78), masked as TFRecord stores it. */
export function bitwiseMaskedCrc32c(bytes: Uint8Array): number {
  let crc = ~0 >>> 0;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  crc = ~crc >>> 0;
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

type Field = { field: number; wire: number; value: number | bigint | Uint8Array };

function readVarint(bytes: Uint8Array, at: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  let i = at;
  for (;;) {
    const b = bytes[i++];
    if (b === undefined) throw new Error("truncated varint");
    value |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [value, i];
    shift += 7n;
  }
}

/** Every field of one protobuf message, in order. */
export function protoFields(bytes: Uint8Array): Field[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Field[] = [];
  let i = 0;
  while (i < bytes.length) {
    const [key, next] = readVarint(bytes, i);
    i = next;
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, n] = readVarint(bytes, i);
      out.push({ field, wire, value: v });
      i = n;
    } else if (wire === 1) {
      out.push({ field, wire, value: view.getFloat64(i, true) });
      i += 8;
    } else if (wire === 5) {
      out.push({ field, wire, value: view.getFloat32(i, true) });
      i += 4;
    } else if (wire === 2) {
      const [len, n] = readVarint(bytes, i);
      out.push({ field, wire, value: bytes.subarray(n, n + Number(len)) });
      i = n + Number(len);
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  if (i !== bytes.length) throw new Error("message overruns its bytes");
  return out;
}

/** The data of every TFRecord in a file, each record's two CRCs checked. */
export function tfRecords(file: Uint8Array): Uint8Array[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < file.length) {
    const length = Number(view.getBigUint64(i, true));
    if (view.getUint32(i + 8, true) !== bitwiseMaskedCrc32c(file.subarray(i, i + 8)))
      throw new Error(`bad length CRC at byte ${i}`);
    const data = file.subarray(i + 12, i + 12 + length);
    if (view.getUint32(i + 12 + length, true) !== bitwiseMaskedCrc32c(data))
      throw new Error(`bad data CRC at byte ${i}`);
    out.push(data);
    i += 16 + length;
  }
  return out;
}

export interface ReadEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars: { tag: string; value: number }[];
}

const text = (v: Field["value"]) => new TextDecoder().decode(v as Uint8Array);

/** The events of a file: wall time, step, file version, and the summary's simple values. */
export function readEvents(file: Uint8Array): ReadEvent[] {
  return tfRecords(file).map((data) => {
    const event: ReadEvent = { wallTime: Number.NaN, step: 0, scalars: [] };
    for (const f of protoFields(data)) {
      if (f.field === 1 && f.wire === 1) event.wallTime = f.value as number;
      else if (f.field === 2 && f.wire === 0) event.step = Number(f.value);
      else if (f.field === 3 && f.wire === 2) event.fileVersion = text(f.value);
      else if (f.field === 5 && f.wire === 2)
        for (const v of protoFields(f.value as Uint8Array).filter((x) => x.field === 1)) {
          const value = protoFields(v.value as Uint8Array);
          event.scalars.push({
            tag: text(value.find((x) => x.field === 1)?.value ?? new Uint8Array()),
            value: value.find((x) => x.field === 2 && x.wire === 5)?.value as number,
          });
        }
      else throw new Error(`unexpected Event field ${f.field} (wire ${f.wire})`);
    }
    return event;
  });
}
