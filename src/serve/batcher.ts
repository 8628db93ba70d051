/**
 * Shares work between requests that arrive together: items asked for during one turn of the event
 * loop are handed to `run` together on the next (`setImmediate`), at most `maxBatch` at a time, one
 * batch after another. A failing batch rejects each of its items with the batch's error.
 */
export class MicroBatcher<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private running = false;
  /** Batches run so far. */
  batches = 0;

  constructor(
    private readonly maxBatch: number,
    private readonly run: (items: I[]) => O[] | Promise<O[]>,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.maxBatch);
        this.batches++;
        try {
          const out = await this.run(batch.map((b) => b.item));
          batch.forEach((b, i) => {
            b.resolve(out[i]);
          });
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
