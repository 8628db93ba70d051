import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EventFileWriter, metricScalar, tensorboardDirOf } from "../../src/store/tensorboard.js";
import { leverErrorOf } from "../helpers/errors.js";
import { readEvents } from "../helpers/tfevents-reader.js";

describe("EventFileWriter", () => {
  it("writes nothing until something is logged, then one file that grows with each call and parses back", () => {
    const dir = tensorboardDirOf(mkdtempSync(join(tmpdir(), "lever-tb-")), "sft-0001");
    expect(dir.endsWith(join("tensorboard", "sft-0001"))).toBe(true);
    let t = 1000;
    const writer = new EventFileWriter(dir, () => t++);
    writer.write([]);
    expect(writer.file).toBeNull();
    writer.logMetrics([
      { runId: "sft-0001", stage: "sft", step: 0, epoch: 0, name: "loss", value: 3 },
      { runId: "sft-0001", stage: "sft", step: 0, epoch: 0, name: "lr", value: 0.001 },
    ]);
    const file = writer.file as string;
    expect(file.startsWith(join(dir, "events.out.tfevents."))).toBe(true);
    const first = readEvents(readFileSync(file));
    expect(first.map((e) => e.fileVersion ?? e.scalars[0].tag)).toEqual(["brain.Event:2", "sft/loss", "sft/lr"]);
    writer.logMetrics([{ runId: "sft-0001", stage: "sft", epoch: 1, name: "epoch.valLoss", value: 1.25 }]);
    writer.close();
    const events = readEvents(readFileSync(file));
    expect(events.at(-1)).toEqual({ wallTime: 1001, step: 1, scalars: [{ tag: "sft/epoch.valLoss", value: 1.25 }] });
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it("steps a metric at its step, else its epoch, else 0", () => {
    const row = { runId: "r", stage: "beams", name: "vlm.calls", value: 5 };
    expect(metricScalar(row)).toEqual({ tag: "beams/vlm.calls", step: 0, value: 5 });
    expect(metricScalar({ ...row, epoch: 3 }).step).toBe(3);
    expect(metricScalar({ ...row, epoch: 3, step: 40 }).step).toBe(40);
  });

  it("a directory it cannot create is a LeverError naming the file", () => {
    const root = mkdtempSync(join(tmpdir(), "lever-tb-"));
    writeFileSync(join(root, "tensorboard"), "a file where the folder should be");
    const writer = new EventFileWriter(tensorboardDirOf(root, "x"));
    const error = leverErrorOf(() => writer.write([{ tag: "a", step: 0, value: 1 }]));
    const prefix = join(root, "tensorboard", "x", "events.out.tfevents.");
    expect(error.location.file?.startsWith(prefix), error.message).toBe(true);
    expect(error.message).toBe(`${error.location.file}: a parent of this path is not a directory (ENOTDIR)`);
  });
});
