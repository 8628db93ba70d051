import { describe, expect, it } from "vitest";
import { createProgress, formatDuration, progressStatus, renderBar } from "../../src/eval/progress.js";

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

  it("appends the detail text, read at each redraw, after the ETA", () => {
    let calls = 0;
    const out: string[] = [];
    const p = createProgress({
      label: "beams",
      stream: { write: (s) => out.push(s) },
      now: () => 0,
      detail: () => `VLM calls ${calls}`,
    });
    p.start(2, 0);
    calls = 46;
    p.advance(2);
    p.finish();
    expect(out.at(-1)).toBe("beams [########################] 2/2 100.0% 0.0/s ETA ? VLM calls 46\n");
  });
});
