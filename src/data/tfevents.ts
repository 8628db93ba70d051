/**
 * TensorBoard event files, the format TensorBoard, W&B (`wandb sync --sync-tensorboard`), MLflow and
 * most trackers read: a sequence of TFRecords, each holding one serialized `tensorflow.Event` protocol
 * buffer. Only what scalars need is encoded:
 *
 *   TFRecord: uint64 length (LE) · uint32 masked CRC-32C of those 8 bytes · data · uint32 masked CRC-32C of data
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
 *
 * (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto, tensorflow/core/lib/io/record_writer.cc.)
 * A file starts with an Event carrying `file_version = "brain.Event:2"`. The file is named
 * `events.out.tfevents.<seconds>.<host>…`: TensorBoard picks up files whose name contains "tfevents".
 * Pure bytes in, bytes out; the workspace side that writes them is src/store/tensorboard.ts.
 */
import { maskedCrc32c } from "../util/crc32c.js";

/** The version string of the first event of every file. */
export const EVENT_FILE_VERSION = "brain.Event:2";

/** One scalar at a step, e.g. tag "sft/loss", step 120. */
export interface ScalarEvent {
  tag: string;
  step: number;
  value: number;
  /** Seconds since the Unix epoch (fractional). */
  wallTime: number;
}

/** A protobuf varint of a non-negative safe integer. */
function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** Field key: (field number << 3) | wire type (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit). */
const key = (field: number, wire: number) => varint((field << 3) | wire);

function lengthDelimited(field: number, bytes: Uint8Array): Uint8Array {
  return Uint8Array.from([...key(field, 2), ...varint(bytes.length), ...bytes]);
}

function double(field: number, value: number): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setFloat64(0, value, true);
  return Uint8Array.from([...key(field, 1), ...bytes]);
}

function float(field: number, value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setFloat32(0, value, true);
  return Uint8Array.from([...key(field, 5), ...bytes]);
}

const concat = (parts: readonly Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const utf8 = (text: string) => new TextEncoder().encode(text);

/** The serialized Event that opens a file: wall time and file version. */
export function encodeFileVersionEvent(wallTime: number): Uint8Array {
  return concat([double(1, wallTime), lengthDelimited(3, utf8(EVENT_FILE_VERSION))]);
}

/** The serialized Event of one scalar (a negative or fractional step is refused: TensorBoard steps count). */
export function encodeScalarEvent(event: ScalarEvent): Uint8Array {
  if (!Number.isSafeInteger(event.step) || event.step < 0)
    throw new RangeError(`a TensorBoard step is a non-negative integer, not ${event.step}`);
  const value = concat([lengthDelimited(1, utf8(event.tag)), float(2, event.value)]);
  const summary = lengthDelimited(1, value);
  return concat([
    double(1, event.wallTime),
    Uint8Array.from([...key(2, 0), ...varint(event.step)]),
    lengthDelimited(5, summary),
  ]);
}

/** One TFRecord around serialized data. */
export function tfRecord(data: Uint8Array): Uint8Array {
  const header = new Uint8Array(12);
  const view = new DataView(header.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(header.subarray(0, 8)), true);
  const footer = new Uint8Array(4);
  new DataView(footer.buffer).setUint32(0, maskedCrc32c(data), true);
  return concat([header, data, footer]);
}

/** The name of a new event file: TensorBoard reads files whose name contains "tfevents". */
export function eventFileName(wallTime: number, host: string, pid: number, sequence: number): string {
  return `events.out.tfevents.${Math.floor(wallTime)}.${host.replace(/[^\w.-]/g, "_")}.${pid}.${sequence}`;
}
