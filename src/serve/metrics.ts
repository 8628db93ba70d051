/**
 * `GET /metrics` in Prometheus' text format (version 0.0.4): requests and errors by route and status,
 * requests in flight, and the latency of each step (embedding, waiting for the selection batch, pool,
 * selection, upstream, the whole request) as histograms in seconds.
 */

/** Bucket upper bounds in seconds: 0.5 ms … 60 s. */
export const BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60];

export const STEPS = ["embed", "queue", "pool", "select", "upstream", "total"] as const;
export type Step = (typeof STEPS)[number];

class Histogram {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  count = 0;
  sum = 0;

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let b = 0; b < BUCKETS.length; b++) if (seconds <= BUCKETS[b]) this.counts[b]++;
  }
}

export class ServeMetrics {
  private readonly requests = new Map<string, number>();
  private readonly errors = new Map<string, number>();
  private readonly steps = new Map<string, Histogram>();
  inFlight = 0;

  request(route: string, status: number): void {
    const key = `route="${route}",status="${status}"`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    if (status >= 400) {
      const errorKey = `route="${route}",status="${status}"`;
      this.errors.set(errorKey, (this.errors.get(errorKey) ?? 0) + 1);
    }
  }

  observe(route: string, step: Step, ms: number): void {
    const key = `route="${route}",step="${step}"`;
    let histogram = this.steps.get(key);
    if (histogram === undefined) this.steps.set(key, (histogram = new Histogram()));
    histogram.observe(ms / 1000);
  }

  render(): string {
    const lines: string[] = [];
    lines.push("# HELP lever_serve_requests_total Requests answered, by route and HTTP status.");
    lines.push("# TYPE lever_serve_requests_total counter");
    for (const [labels, n] of this.requests) lines.push(`lever_serve_requests_total{${labels}} ${n}`);
    lines.push("# HELP lever_serve_errors_total Requests answered with a 4xx or 5xx status, by route and status.");
    lines.push("# TYPE lever_serve_errors_total counter");
    for (const [labels, n] of this.errors) lines.push(`lever_serve_errors_total{${labels}} ${n}`);
    lines.push("# HELP lever_serve_in_flight Requests being handled.");
    lines.push("# TYPE lever_serve_in_flight gauge");
    lines.push(`lever_serve_in_flight ${this.inFlight}`);
    lines.push(
      "# HELP lever_serve_step_seconds Latency of each step of a request: embed, pool, select, upstream, total.",
    );
    lines.push("# TYPE lever_serve_step_seconds histogram");
    for (const [labels, h] of this.steps) {
      BUCKETS.forEach((le, b) => {
        lines.push(`lever_serve_step_seconds_bucket{${labels},le="${le}"} ${h.counts[b]}`);
      });
      lines.push(`lever_serve_step_seconds_bucket{${labels},le="+Inf"} ${h.count}`);
      lines.push(`lever_serve_step_seconds_sum{${labels}} ${h.sum}`);
      lines.push(`lever_serve_step_seconds_count{${labels}} ${h.count}`);
    }
    return `${lines.join("\n")}\n`;
  }
}
