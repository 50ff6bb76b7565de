// A Prometheus histogram whose labelled children are found once and then observe
// with no look-up: prom-client's child observe() validates and hashes its labels
// object on every call, the largest part of lspd_http_request_seconds' cost per
// answer (bench/hot-profile). Registered in the same registry and read through the
// interface prom-client's Registry reads its own metrics by (`get`, `reset`), so
// /metrics shows the same series: `_bucket` (cumulative, `le`), `_sum`, `_count`.
import type { Registry } from 'prom-client';

type Labels<L extends string> = Record<L, string | number>;

/** One label set's counts. */
class Child {
  /** Per bucket (the last: past every bound), not yet cumulative. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string | number>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    if (!Number.isFinite(v)) throw new TypeError(`Value is not a valid number: ${v}`);
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

export class BoundHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** The bucket bounds, ascending (prom-client's name for them: bench/behaviour-dump reads it). */
  readonly upperBounds: readonly number[];
  private children = new Map<string, Child>();

  constructor(opts: { name: string; help: string; labelNames: readonly L[]; buckets: readonly number[]; registers: Registry[] }) {
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames;
    this.upperBounds = [...opts.buckets].sort((a, b) => a - b);
    for (const r of opts.registers) r.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The child of one label set (the same one for the same labels): keep it, and observe through it. */
  labels(labels: Labels<L>): { observe(v: number): void } {
    const key = this.labelNames.map((n) => String(labels[n] ?? '')).join('\u0000');
    let c = this.children.get(key);
    if (!c) this.children.set(key, (c = new Child({ ...labels }, this.upperBounds)));
    return c;
  }

  observe(labels: Labels<L>, v: number): void {
    this.labels(labels).observe(v);
  }

  reset(): void {
    this.children = new Map();
  }

  /** What prom-client's Registry renders (its own histograms' shape). */
  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const c of this.children.values()) {
      let acc = 0;
      for (let i = 0; i <= this.upperBounds.length; i++) {
        acc += c.counts[i]!;
        values.push({
          labels: { ...c.labels, le: i < this.upperBounds.length ? this.upperBounds[i]! : '+Inf' },
          value: acc,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
