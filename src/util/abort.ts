/**
 * A child AbortSignal that follows a caller's signal, for fanning one signal out to many concurrent
 * operations. Every operation that waits (a queue slot, a retry delay, a request) adds an "abort"
 * listener to the signal it was given; hundreds of them on the caller's one signal trigger Node's
 * MaxListenersExceededWarning. Instead the caller's signal gets ONE listener (removed by `dispose`)
 * and the child declares how many listeners it can legitimately hold, so a real leak still warns.
 */
import { setMaxListeners } from "node:events";

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Aborts the child only (e.g. one operation failed and the others should stop). */
  abort(reason: unknown): void;
  /** Detaches from the parent; call when the fan-out is over. */
  dispose(): void;
}

/** `maxListeners`: the most operations that may wait on the child at once (each adds one listener). */
export function linkedSignal(parent: AbortSignal | undefined, maxListeners: number): LinkedSignal {
  const controller = new AbortController();
  setMaxListeners(Math.max(10, maxListeners), controller.signal);
  const abort = (reason: unknown) => controller.abort(reason);
  if (parent === undefined) return { signal: controller.signal, abort, dispose() {} };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, abort, dispose() {} };
  }
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, abort, dispose: () => parent.removeEventListener("abort", onAbort) };
}
