/**
 * Terminal progress for training: on a TTY a single redrawn line (epoch, bar, step, loss, lr); in
 * logs (no TTY) only one line per epoch. Writes to stderr so stdout stays machine-readable. Metric
 * values read as `lever eval` prints them (`formatMetric`): accuracies in %, counts as integers,
 * small values (a learning rate) in exponent form instead of 0.0000.
 */
import type { EpochInfo, StepInfo } from "../loop/loop.js";

/** Accuracies (`valAccuracy`, `valAccuracy@2`, `sampledAccuracy`) are fractions in the metrics, printed as %. */
const ACCURACY = /^(valAccuracy|sampledAccuracy)(Start)?(@\d+)?$/;
const ACCURACY_GAIN = /^valAccuracyGain(@\d+)?$/;

/**
 * A metric's value for a log line: an accuracy in % (a gain in points), a whole number (a count, or a
 * mean of counts) without decimals, |v| < 0.001 in exponent form (lr 1.00e-4), else 4 decimals.
 */
export function formatMetric(name: string, v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (ACCURACY.test(name)) return `${(100 * v).toFixed(1)}%`;
  if (ACCURACY_GAIN.test(name)) return `${v >= 0 ? "+" : ""}${(100 * v).toFixed(1)} pts`;
  if (Math.abs(v - Math.round(v)) < 1e-9 * Math.max(1, Math.abs(v))) return String(Math.round(v));
  if (Math.abs(v) < 1e-3) return v.toExponential(2);
  return v.toFixed(4);
}

export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export class TrainingProgress {
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly epochs: number,
    private readonly out: ProgressStream = process.stderr,
    /** Metrics shown on the epoch line (default: all). */
    private readonly display?: readonly string[],
  ) {}

  step(info: StepInfo): void {
    if (!this.out.isTTY) return;
    const now = Date.now();
    if (now - this.lastDraw < 100 && info.batch + 1 < info.batches) return;
    this.lastDraw = now;
    const width = 24;
    const filled = Math.round((width * (info.batch + 1)) / info.batches);
    const bar = `${"#".repeat(filled)}${".".repeat(width - filled)}`;
    this.out.write(
      `\r${this.label} epoch ${info.epoch + 1}/${this.epochs} [${bar}] ${info.batch + 1}/${info.batches} ` +
        `loss ${info.metrics.loss.toFixed(4)} lr ${info.metrics.lr.toExponential(2)}`,
    );
  }

  epoch(info: EpochInfo): void {
    const shown = this.display
      ? this.display.filter((k) => info.metrics[k] !== undefined).map((k) => [k, info.metrics[k]] as const)
      : Object.entries(info.metrics);
    const metrics = shown.map(([k, v]) => `${k} ${formatMetric(k, v)}`).join("  ");
    this.out.write(
      `${this.out.isTTY ? "\r\x1b[K" : ""}${this.label} epoch ${info.epoch + 1}/${this.epochs}  ${metrics}${info.improved ? "  *best" : ""}\n`,
    );
  }

  /** A warning line (clears a TTY progress line first). */
  warn(message: string): void {
    this.out.write(`${this.out.isTTY ? "\r\x1b[K" : ""}warning: ${message}\n`);
  }
}
