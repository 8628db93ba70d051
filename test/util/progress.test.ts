import { afterEach, describe, expect, it, vi } from "vitest";
import { createProgress, formatDuration, progressStatus, renderBar } from "../../src/util/progress.js";

describe("progress", () => {
  it("formats durations as s, m+s and h+m", () => {
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(42.4)).toBe("42s");
    expect(formatDuration(185)).toBe("3m05s");
    expect(formatDuration(3720)).toBe("1h02m");
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe("?");
  });

  it("renders a proportional bar", () => {
    expect(renderBar(0, 4)).toBe("[----]");
    expect(renderBar(0.5, 4)).toBe("[##--]");
    expect(renderBar(1.7, 4)).toBe("[####]");
  });

  it("computes the ETA from the rate of work done by this process only (resumed work excluded)", () => {
    // 100 total, 60 done of which 50 were resumed: 10 items in 5 s → 2/s → 40 left → 20 s.
    expect(progressStatus("eval", 60, 100, 5, 10)).toBe("eval [##############----------] 60/100 60.0% 2.0/s ETA 20s");
    expect(progressStatus("eval", 0, 100, 0, 0)).toContain("ETA ?");
  });

  it("redraws one line with \\r on a terminal and prints periodic plain lines otherwise", () => {
    let t = 0;
    const ttyOut: string[] = [];
    const tty = createProgress({ label: "x", stream: { write: (s) => ttyOut.push(s), isTTY: true }, now: () => t });
    tty.start(10, 0);
    for (let i = 0; i < 10; i++) {
      t += 50; // 50 ms per item, redraw at most every 100 ms
      tty.advance(1);
    }
    tty.finish();
    expect(ttyOut.every((s) => s.startsWith("\r"))).toBe(true);
    expect(ttyOut.length).toBe(1 + 5 + 1);
    expect(ttyOut.at(-1)).toMatch(/10\/10 100\.0%.*\n$/);

    t = 0;
    const logOut: string[] = [];
    const log = createProgress({
      label: "x",
      stream: { write: (s) => logOut.push(s) },
      now: () => t,
      intervalMs: 1000,
    });
    log.start(10, 0);
    for (let i = 0; i < 10; i++) {
      t += 250;
      log.advance(1);
    }
    log.finish();
    expect(logOut.every((s) => !s.includes("\r") && s.endsWith("\n"))).toBe(true);
    expect(logOut.length).toBe(2 + 1); // at 1 s and 2 s, then the final line
  });

  it("redraws while nothing completes and appends what the VLM client is waiting for", () => {
    vi.useFakeTimers();
    let t = 0;
    let activity = "";
    const out: string[] = [];
    const p = createProgress({
      label: "eval",
      stream: { write: (s) => out.push(s) },
      now: () => t,
      intervalMs: 10_000,
      activity: () => activity,
    });
    p.start(100, 0);
    p.advance(10);
    expect(out).toEqual([]);
    activity = "retrying 3, 1/1 endpoint cooling 4 s (12 waiting)";
    t = 10_000;
    vi.advanceTimersByTime(10_000); // nothing completed for 10 s: a line anyway
    expect(out).toEqual([
      "eval [##----------------------] 10/100 10.0% 1.0/s ETA 1m30s | retrying 3, 1/1 endpoint cooling 4 s (12 waiting)\n",
    ]);
    t = 15_000;
    p.advance(5); // within the interval: no line
    activity = "";
    t = 25_000;
    vi.advanceTimersByTime(10_000);
    expect(out[1]).toBe("eval [####--------------------] 15/100 15.0% 0.6/s ETA 2m22s\n");
    p.finish();
    const lines = out.length;
    t = 60_000;
    vi.advanceTimersByTime(60_000); // finished: the timer is gone
    expect(out.length).toBe(lines);
  });
});

afterEach(() => {
  vi.useRealTimers();
});
