/**
 * Ctrl-C for every long command (`lever run`, `lever demo`, `lever train …`, `lever beams`,
 * `lever rollouts`, `lever eval`): the first SIGINT aborts the signal handed to the work, which stops
 * at its next batch, item or prediction after storing what it finished, and ends in an
 * InterruptedError saying what was kept and how to resume (`lever` prints it and exits 130). A second
 * SIGINT stops the process at once (exit 130); what was stored before stays, and a rerun resumes.
 * Ctrl-C in a last phase that does not watch the signal (the comparison and report of `lever run` and
 * `lever demo`, the summary of `lever eval`) still ends the command with exit 130 once that phase
 * yields, instead of printing its result as if nothing happened.
 */
import { setMaxListeners } from "node:events";
import type { Command } from "commander";
import type { Workspace } from "../store/workspace.js";
import { InterruptedError } from "../util/errors.js";
import { withWorkspace } from "./common.js";

/** How a single command resumes after Ctrl-C (appended to its stage's InterruptedError). */
export const RERUN_TO_RESUME = "rerun the same command to resume";

/** Runs `fn` with a signal that the first Ctrl-C aborts; the handler is removed when `fn` settles. */
export async function withSigint<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  // Every batch in flight listens to this one signal (one per item in flight, more than Node's default 10).
  setMaxListeners(0, controller.signal);
  const onSigint = () => {
    if (controller.signal.aborted) {
      process.stderr.write("\ninterrupt: stopping at once (exit 130); a rerun resumes from what was stored\n");
      process.exit(130);
    }
    process.stderr.write(
      "\ninterrupt: stopping after the batch or item in flight (finished work is kept); Ctrl-C again stops at once\n",
    );
    controller.abort();
  };
  process.on("SIGINT", onSigint);
  try {
    const value = await fn(controller.signal);
    // A Ctrl-C during work that never looks at the signal (a comparison, a report, a summary: computed
    // in one go) is not ignored: its handler runs once that work yields — here at the latest.
    await new Promise((resolve) => setImmediate(resolve));
    if (controller.signal.aborted) throw finishedInterrupted();
    return value;
  } finally {
    process.removeListener("SIGINT", onSigint);
  }
}

/** Ctrl-C that came while the work finished: what it did is stored, its result is not printed. */
function finishedInterrupted(): InterruptedError {
  return new InterruptedError(
    "stopped as the work finished: everything it did is stored, its result was not printed; rerun the same command to see it (finished work is reused)",
  );
}

/** Opens the command's workspace and runs `fn` with a signal that Ctrl-C aborts (the work done so far is kept). */
export function withInterrupt<T>(cmd: Command, fn: (ws: Workspace, signal: AbortSignal) => Promise<T>): Promise<T> {
  return withSigint((signal) => withWorkspace(cmd, (ws) => fn(ws, signal)));
}
