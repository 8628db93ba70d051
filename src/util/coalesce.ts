/**
 * Write-as-it-arrives with few transactions: items added during one turn of the event loop are
 * handed to `write` together on the next turn (setImmediate), so responses that arrive one by one
 * are stored within milliseconds, yet a burst of arrivals costs one SQLite transaction, not one
 * each. `flush()` writes what is pending now; call it before reporting work as done. A failing
 * `write` is re-thrown by the next `add` or `flush` (never from the timer, where nobody could catch it).
 */
export class Coalescer<T> {
  private pending: T[] = [];
  private timer: NodeJS.Immediate | null = null;
  private failure: { error: unknown } | null = null;

  constructor(private readonly write: (items: T[]) => void) {}

  add(item: T): void {
    this.rethrow();
    this.pending.push(item);
    this.timer ??= setImmediate(() => {
      this.timer = null;
      try {
        this.writePending();
      } catch (error) {
        this.failure = { error };
      }
    });
  }

  flush(): void {
    if (this.timer !== null) {
      clearImmediate(this.timer);
      this.timer = null;
    }
    this.rethrow();
    this.writePending();
  }

  private writePending(): void {
    if (this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    this.write(items);
  }

  private rethrow(): void {
    if (this.failure === null) return;
    const { error } = this.failure;
    this.failure = null;
    throw error;
  }
}
