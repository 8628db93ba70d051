/**
 * Progress reporting on stderr: a redrawn bar with rate and ETA when stderr is a terminal, periodic
 * plain lines otherwise (logs, CI). The ETA uses only work done by this process, so work skipped
 * on resume does not make the estimate optimistic. The line also shows what the VLM client is
 * waiting for (`activity`: retries, endpoints cooling down, how long nothing has succeeded) and is
 * redrawn on a timer while nothing completes, so a stalled run never looks silently stuck.
 */

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface Progress {
  /** `alreadyDone` items are counted as done but not used for the rate. */
  start(total: number, alreadyDone: number): void;
  advance(count: number): void;
  finish(): void;
}

export interface ProgressOptions {
  label: string;
  stream?: ProgressStream;
  /** Milliseconds clock; injectable for tests. */
  now?: () => number;
  /** Minimum time between redraws (TTY) or lines (non-TTY). Defaults: 100 ms / 10 s. */
  intervalMs?: number;
  /** What the backend is waiting for, appended to the line ("" = nothing worth saying). */
  activity?: () => string;
  /** Redraw at least this often while nothing completes (default 1 s on a terminal, else `intervalMs`). */
  idleMs?: number;
}

export const silentProgress: Progress = { start() {}, advance() {}, finish() {} };

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? (() => performance.now());
  const tty = stream.isTTY === true;
  const interval = options.intervalMs ?? (tty ? 100 : 10_000);
  const idle = options.idleMs ?? (tty ? 1000 : interval);
  let total = 0;
  let done = 0;
  let resumed = 0;
  let startedAt = 0;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | null = null;

  const draw = (final: boolean) => {
    lastDraw = now();
    let status = progressStatus(options.label, done, total, (lastDraw - startedAt) / 1000, done - resumed);
    const waiting = final ? "" : (options.activity?.() ?? "");
    if (waiting !== "") status += ` | ${waiting}`;
    if (tty) stream.write(`\r${status}\u001b[K${final ? "\n" : ""}`);
    else stream.write(`${status}\n`);
  };
  return {
    start(t, alreadyDone) {
      total = t;
      done = alreadyDone;
      resumed = alreadyDone;
      startedAt = now();
      lastDraw = startedAt;
      if (tty || alreadyDone > 0) draw(false);
      timer = setInterval(() => {
        if (now() - lastDraw >= idle) draw(false);
      }, idle);
      timer.unref();
    },
    advance(count) {
      done += count;
      if (now() - lastDraw >= interval) draw(false);
    },
    finish() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      draw(true);
    },
  };
}

/** One status line: label, bar, counts, percentage, rate and ETA. Pure (tested directly). */
export function progressStatus(
  label: string,
  done: number,
  total: number,
  elapsedSec: number,
  workDone: number,
): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const rate = elapsedSec > 0 && workDone > 0 ? workDone / elapsedSec : 0;
  const eta = rate > 0 ? formatDuration((total - done) / rate) : "?";
  const percent = `${(100 * fraction).toFixed(1)}%`;
  return `${label} ${renderBar(fraction, 24)} ${done}/${total} ${percent} ${rate.toFixed(1)}/s ETA ${eta}`;
}

/** "[#####-----]" with `width` cells. */
export function renderBar(fraction: number, width: number): string {
  const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

/** Seconds → "42s", "3m05s", "1h02m". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
