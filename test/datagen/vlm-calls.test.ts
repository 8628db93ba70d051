import { describe, expect, it } from "vitest";
import { callCounter } from "../../src/datagen/vlm-calls.js";
import { LeverError } from "../../src/util/errors.js";
import type { VlmActivity } from "../../src/vlm/stats.js";
import { type Outcome, type ScoreResult, type Vlm, vlmFailure } from "../../src/vlm/types.js";

/** A backend answering scores from `answer(i)`, with a preflight check and an activity report. */
function backend(answer: (i: number) => Outcome<ScoreResult>) {
  const checks: unknown[] = [];
  const activity: VlmActivity = {
    inFlight: 1,
    waiting: 0,
    retrying: 2,
    endpoints: 1,
    cooling: 0,
    coolingForMs: 0,
    failingForMs: null,
    breakerMs: 20_000,
  };
  const vlm: Vlm & { activity(): VlmActivity } = {
    id: "fake",
    generate: async () => [],
    scoreAnswer: async (requests) => requests.map((_, i) => answer(i)),
    preflight: async (options) => {
      checks.push(options);
    },
    activity: () => activity,
  };
  return { vlm, checks };
}
const request = { prompt: { items: [] } as never, answer: "a" };

describe("callCounter", () => {
  it("counts requests and failures by reason, and passes the preflight check and the activity through", async () => {
    const { vlm, checks } = backend((i) =>
      i === 1 ? vlmFailure("http-5xx", "HTTP 500") : { logprobSum: -1, logprobMean: -1, tokens: 1 },
    );
    const counter = callCounter();
    const wrapped = counter.wrap(vlm);
    await wrapped.scoreAnswer([request, request, request]);
    await wrapped.preflight?.({ scoring: true });
    expect(checks).toEqual([{ scoring: true }]);
    expect(counter.activity()).toBe("VLM calls 3, retrying 2");
    expect(counter.summary(wrapped)).toEqual({
      calls: 3,
      cacheHits: 0,
      failures: 1,
      failuresByReason: { "http-5xx": 1 },
    });
  });

  it("stops the stage with one LeverError when the client's circuit breaker refuses a request", async () => {
    const { vlm } = backend(() => vlmFailure("circuit-open", "the VLM endpoint has been failing for 20 s"));
    const wrapped = callCounter().wrap(vlm);
    const stopped = wrapped.scoreAnswer([request]);
    await expect(stopped).rejects.toThrow(LeverError);
    await expect(wrapped.scoreAnswer([request])).rejects.toThrow(
      /^stopped: the VLM endpoint has been failing for 20 s\. Finished items are kept; rerun the same command to resume$/,
    );
  });
});
