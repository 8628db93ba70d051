import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type BeamsHooks,
  type BeamsSettingsInput,
  BeamsSettingsSchema,
  beamsInterrupted,
  failedAnchorsError,
  runBeams,
} from "../../src/datagen/beams-stage.js";
import { readBeamSet } from "../../src/store/sets.js";
import { InterruptedError } from "../../src/util/errors.js";
import { VlmSettingsSchema } from "../../src/vlm/settings.js";
import type { Vlm } from "../../src/vlm/types.js";
import { type DatagenWorkspace, datagenWorkspace } from "./helpers.js";

const BASE = { dataset: "train", pools: "p", anchors: "first:5", shots: 2, beamSize: 3, out: "b" };

function beams(w: DatagenWorkspace, over: Partial<BeamsSettingsInput> = {}, hooks: BeamsHooks = {}) {
  return runBeams(
    w.ws,
    BeamsSettingsSchema.parse({ ...BASE, ...over }),
    // The cache is on for the simulator too: this file tests what the cache serves.
    VlmSettingsSchema.parse({ vlm: "sim", world: w.worldFile, cache: "on" }),
    { progress: null, ...hooks },
  );
}

const bytes = (w: DatagenWorkspace, name = "b") => readFileSync(w.ws.artifactPath(`beams/${name}.json`));

/** Passes requests through; after `after` scoreAnswer calls aborts `controller`, and fails queries `failing` returns true for. */
function instrument(options: { after?: number; controller?: AbortController; failing?: (queryId: string) => boolean }) {
  let calls = 0;
  return (backend: Vlm): Vlm => ({
    id: backend.id,
    generate: (prompts, o) => backend.generate(prompts, o),
    scoreAnswer: async (requests, o) => {
      calls++;
      if (options.after !== undefined && calls > options.after) options.controller?.abort();
      const out = await backend.scoreAnswer(requests, o);
      return out.map((r, i) =>
        options.failing?.(requests[i].prompt.query.questionId)
          ? { reason: "http-5xx" as const, message: "injected" }
          : r,
      );
    },
  });
}

describe("lever beams stage", () => {
  it("writes the same bytes whatever the concurrency, and a rerun makes no VLM call", async () => {
    const one = await datagenWorkspace();
    const eight = await datagenWorkspace();
    const a = await beams(one, { concurrency: 1 });
    const b = await beams(eight, { concurrency: 8 });
    expect(a.artifact).not.toBeNull();
    expect(bytes(one).equals(bytes(eight))).toBe(true);
    // K = 12, beam 3, 2 shots: 1 + 12 + 3 × 11 scored answers per anchor.
    expect(a.requestsPerAnchor).toEqual({ mean: 46, min: 46, max: 46 });
    expect(b.vlm.calls).toBe(5 * 46);

    const again = await beams(one);
    expect(again).toMatchObject({ runId: a.runId, resumed: true, anchors: { skipped: 5, searched: 0 } });
    expect(again.vlm.calls).toBe(0);
    expect(bytes(one).equals(bytes(eight))).toBe(true);

    // Another anchor set is another run; the five shared anchors come from the response cache.
    const six = await beams(one, { anchors: "first:6", out: "b6" });
    expect(six.runId).not.toBe(a.runId);
    expect(six.vlm.calls).toBe(46);
    expect(six.vlm.cacheHits).toBe(5 * 46);

    const set = readBeamSet(one.ws, "b");
    const anchor = Object.values(set.queries)[0];
    expect(anchor.beams).toHaveLength(3);
    expect(anchor.beams.map((x) => x.score)).toEqual([...anchor.beams.map((x) => x.score)].sort((x, y) => y - x));
    expect(anchor.pool?.set).toBe("p");
    expect(set.search).toMatchObject({
      method: "infoscore",
      answer: "multiple_choice_answer",
      beamSize: 3,
      budget: null,
    });
    for (const beam of anchor.beams) expect(beam.shotScores!.reduce((s, g) => s + g, 0)).toBeCloseTo(beam.score, 10);
  });

  it("resumes a killed run and ends with the bytes of an uninterrupted one", async () => {
    const clean = await datagenWorkspace();
    await beams(clean);
    const killed = await datagenWorkspace();
    const controller = new AbortController();
    const first = await beams(
      killed,
      { concurrency: 2 },
      { signal: controller.signal, wrapBackend: instrument({ after: 5, controller }) },
    );
    expect(first.aborted).toBe(true);
    expect(first.artifact).toBeNull();
    const stored = first.anchors.searched;
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(5);
    const error = beamsInterrupted(first, "rerun");
    expect(error).toBeInstanceOf(InterruptedError);
    expect(error.message).toBe(
      `beam search run ${first.runId} stopped after ${stored} of 5 anchors (those are stored); rerun`,
    );
    const resumed = await beams(killed, { concurrency: 3 });
    expect(resumed).toMatchObject({ runId: first.runId, resumed: true, aborted: false });
    expect(resumed.anchors.skipped).toBe(stored);
    expect(bytes(killed).equals(bytes(clean))).toBe(true);
  });

  it("records a failed anchor, writes nothing, and retries only it on the next run", async () => {
    const w = await datagenWorkspace();
    const victim = Object.keys(readBeamSetAnchors(w))[2];
    const failing = await beams(w, {}, { wrapBackend: instrument({ failing: (id) => id === victim }) });
    expect(failing.artifact).toBeNull();
    expect(failing.failures).toEqual([{ anchor: victim, error: expect.stringContaining("http-5xx: injected") }]);
    // The victim's first batch (the empty prompt + K = 12 candidates) failed; the search stopped there.
    expect(failing.vlm).toMatchObject({ failures: 13, failuresByReason: { "http-5xx": 13 } });
    expect(failedAnchorsError(failing).message).toContain(`1 of 5 anchors failed (first: ${victim}: http-5xx`);
    expect(w.ws.getStage(failing.runId, "beams")?.status).toBe("failed");
    const retry = await beams(w);
    expect(retry.anchors).toEqual({ planned: 5, skipped: 4, searched: 1, failed: 0 });
    expect(retry.artifact).not.toBeNull();
    expect(w.ws.getStage(retry.runId, "beams")?.status).toBe("done");
  });
});

/** The first five training anchors with a pool (the order `first:5` takes them). */
function readBeamSetAnchors(w: DatagenWorkspace): Record<string, true> {
  const ids = w.ws
    .loadItems("train")
    .slice(0, 5)
    .map((item) => item.questionId);
  return Object.fromEntries(ids.map((id) => [id, true]));
}
