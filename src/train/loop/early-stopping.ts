/**
 * Tracks the best value of one validation metric and says when to stop: after `patience` epochs
 * without an improvement larger than `minDelta` (patience 0 = never stop early).
 */
export class EarlyStopping {
  best: number | null = null;
  bestEpoch = -1;
  private sinceBest = 0;

  constructor(
    readonly mode: "min" | "max",
    readonly patience: number,
    readonly minDelta = 0,
  ) {}

  /** Serializable state (for resuming). */
  state(): { best: number | null; bestEpoch: number; sinceBest: number } {
    return { best: this.best, bestEpoch: this.bestEpoch, sinceBest: this.sinceBest };
  }

  restore(s: { best: number | null; bestEpoch: number; sinceBest: number }): void {
    this.best = s.best;
    this.bestEpoch = s.bestEpoch;
    this.sinceBest = s.sinceBest;
  }

  /** Records the metric of `epoch`; `improved` = new best, `stop` = patience exhausted. */
  update(value: number, epoch: number): { improved: boolean; stop: boolean } {
    const better =
      Number.isFinite(value) &&
      (this.best === null ||
        (this.mode === "min" ? value < this.best - this.minDelta : value > this.best + this.minDelta));
    if (better) {
      this.best = value;
      this.bestEpoch = epoch;
      this.sinceBest = 0;
    } else {
      this.sinceBest++;
    }
    return { improved: better, stop: this.patience > 0 && this.sinceBest >= this.patience };
  }
}
