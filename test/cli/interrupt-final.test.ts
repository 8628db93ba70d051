/**
 * withSigint (src/cli/interrupt.ts): a Ctrl-C during work that never looks at the signal — the
 * comparison and report of `lever run`/`lever demo`, the summary of `lever eval` — still ends the
 * command as interrupted (exit 130) once the work yields, instead of being ignored.
 */
import { describe, expect, it } from "vitest";
import { withSigint } from "../../src/cli/interrupt.js";
import { InterruptedError } from "../../src/util/errors.js";

/** Calls only the SIGINT handler withSigint installed (not the test runner's), as a Ctrl-C would. */
function ctrlC(others: readonly unknown[]): void {
  for (const listener of process.listeners("SIGINT")) if (!others.includes(listener)) (listener as () => void)();
}

describe("withSigint", () => {
  it("ends work that finished after an unwatched Ctrl-C with an InterruptedError; without one, returns its value", async () => {
    const others = process.listeners("SIGINT");
    const write = process.stderr.write;
    process.stderr.write = (() => true) as typeof process.stderr.write;
    try {
      const interrupted = withSigint(async () => {
        ctrlC(others);
        return "the comparison";
      });
      await expect(interrupted).rejects.toThrow(InterruptedError);
      await expect(interrupted).rejects.toThrow(
        "stopped as the work finished: everything it did is stored, its result was not printed; rerun the same command to see it (finished work is reused)",
      );
      await expect(withSigint(async () => "done")).resolves.toBe("done");
      expect(process.listeners("SIGINT")).toEqual(others);
    } finally {
      process.stderr.write = write;
    }
  });
});
