import { describe, expect, it } from "vitest";
import {
  EVENT_FILE_VERSION,
  encodeFileVersionEvent,
  encodeScalarEvent,
  eventFileName,
  tfRecord,
} from "../../src/data/tfevents.js";
import { bitwiseMaskedCrc32c, readEvents } from "../helpers/tfevents-reader.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("tfevents", () => {
  it("encodes a scalar Event byte for byte as event.proto and summary.proto lay it out", () => {
    const bytes = encodeScalarEvent({ tag: "a", step: 300, value: 1.5, wallTime: 2 });
    const expected = [
      "09 0000000000000040", // wall_time = 1 (64-bit): 2.0 little-endian
      "10 ac02", // step = 2 (varint): 300
      "2a 0a", // summary = 5 (length-delimited), 10 bytes
      "0a 08", //   Summary.value = 1, 8 bytes
      "0a 01 61", //     Value.tag = 1: "a"
      "15 0000c03f", //     Value.simple_value = 2 (32-bit): 1.5f
    ].join("");
    expect(hex(bytes)).toBe(expected.replace(/ /g, "").replace(/\/\/.*$/gm, ""));
  });

  it("opens a file with the file_version event", () => {
    const version = Buffer.from(EVENT_FILE_VERSION).toString("hex");
    expect(EVENT_FILE_VERSION).toBe("brain.Event:2");
    expect(hex(encodeFileVersionEvent(2))).toBe(`090000000000000040${"1a0d"}${version}`);
  });

  it("frames a TFRecord: uint64 length, masked CRC of the length, data, masked CRC of the data", () => {
    const data = new TextEncoder().encode("123456789");
    const record = tfRecord(data);
    const length = Uint8Array.from([9, 0, 0, 0, 0, 0, 0, 0]);
    const u32 = (n: number) => {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setUint32(0, n, true);
      return hex(b);
    };
    expect(record.length).toBe(8 + 4 + 9 + 4);
    expect(hex(record)).toBe(hex(length) + u32(bitwiseMaskedCrc32c(length)) + hex(data) + u32(0x2507c60d + 0xa282ead8));
  });

  it("round-trips through an independent reader: steps, tags, values (also NaN and unicode tags)", () => {
    const events = [
      { tag: "sft/loss", step: 0, value: 2.5, wallTime: 1_700_000_000.25 },
      { tag: "grpo/epoch.valAccuracy", step: 2 ** 40, value: Number.NaN, wallTime: 1_700_000_001 },
      { tag: "sft/entropy@1 – é", step: 127, value: -0.1, wallTime: 1_700_000_002 },
    ];
    const file = Buffer.concat([
      tfRecord(encodeFileVersionEvent(1_700_000_000)),
      ...events.map((e) => tfRecord(encodeScalarEvent(e))),
    ]);
    const read = readEvents(file);
    expect(read[0]).toEqual({ wallTime: 1_700_000_000, step: 0, fileVersion: "brain.Event:2", scalars: [] });
    expect(read.slice(1).map((r) => [r.wallTime, r.step, r.scalars[0].tag])).toEqual(
      events.map((e) => [e.wallTime, e.step, e.tag]),
    );
    expect(read[1].scalars[0].value).toBe(2.5);
    expect(read[2].scalars[0].value).toBeNaN();
    expect(read[3].scalars[0].value).toBeCloseTo(-0.1, 6); // stored as float32
  });

  it("refuses a step TensorBoard cannot hold, and names files so TensorBoard finds them", () => {
    expect(() => encodeScalarEvent({ tag: "x", step: -1, value: 0, wallTime: 0 })).toThrow(/non-negative integer/);
    expect(() => encodeScalarEvent({ tag: "x", step: 1.5, value: 0, wallTime: 0 })).toThrow(/non-negative integer/);
    expect(eventFileName(1700000000.7, "my host/1", 42, 0)).toBe("events.out.tfevents.1700000000.my_host_1.42.0");
  });
});
