import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEvalOptions } from "../../src/eval/config.js";
import { evaluate } from "../../src/eval/evaluate.js";
import { tensorboardDirOf } from "../../src/store/tensorboard.js";
import { readEvents } from "../helpers/tfevents-reader.js";
import { type SimWorkspace, simWorkspace } from "./sim-workspace.js";

let sim: SimWorkspace;
beforeAll(() => {
  sim = simWorkspace();
});
afterAll(() => sim.ws.close());

describe("an evaluation's TensorBoard events", () => {
  it("hold each method's accuracy and Δ vs the baseline at step = shot, as the stored summary states them", async () => {
    const options = parseEvalOptions({
      dataset: "val",
      index: "train",
      queries: "first:20",
      shots: [1, 2],
      retrievers: ["random", "topk-image"],
      vlm: "sim",
      world: sim.worldFile,
      k: 16,
      seed: 5,
      resamples: 200,
    });
    const result = await evaluate(sim.ws, options, { progress: null });
    const dir = tensorboardDirOf(sim.ws.dir, result.runId);
    const [file] = readdirSync(dir);
    const read = readEvents(readFileSync(join(dir, file))).flatMap((e) =>
      e.scalars.map((s) => [s.tag, e.step, Math.fround(s.value)] as const),
    );
    const summary = result.summary!;
    const table = summary.tables[0];
    const expected = table.rows.flatMap((row) =>
      row.cells.flatMap((c) => {
        const label = summary.rows.find((r) => r.id === row.row)!.label;
        return [
          [`eval/${label}/accuracy`, c!.shot, Math.fround(c!.accuracy!)] as const,
          ...(c!.comparison ? [[`eval/${label}/delta`, c!.shot, Math.fround(c!.comparison.difference)] as const] : []),
        ];
      }),
    );
    expect(read).toEqual(expected);
    expect(read.map((r) => r[0])).toEqual(
      expect.arrayContaining(["eval/random/accuracy", "eval/topk-image/accuracy", "eval/topk-image/delta"]),
    );
  });
});
