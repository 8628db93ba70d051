import type { ProgressStream } from "../../src/train/stage/progress.js";

/** A progress stream that kills the run (throws "simulated crash") when a line containing `marker` is written. */
export function crashingProgress(marker: string): ProgressStream {
  return {
    isTTY: false,
    write: (text: string) => {
      if (text.includes(marker)) throw new Error("simulated crash");
    },
  };
}
