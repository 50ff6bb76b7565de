import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { BoundHistogram } from './bound-histogram.js';

test("a bound histogram's exposition is prom-client's own, series for series", async () => {
  const theirs = new Registry();
  const ours = new Registry();
  const opts = { name: 'x_seconds', help: 'Latency.', buckets: [0.001, 0.01, 1] };
  const ph = new Histogram({ ...opts, labelNames: ['route', 'status'], registers: [theirs] });
  const bh = new BoundHistogram({ ...opts, labelNames: ['route', 'status'] as const, registers: [ours] });
  const kept = bh.labels({ route: '/a', status: '200' });
  for (const [route, status, v] of [
    ['/a', '200', 0.0005],
    ['/a', '200', 0.01], // on a bound: that bucket, as prom-client
    ['/b', '404', 5],
    ['/a', '200', 0.001],
  ] as const) {
    ph.labels({ route, status }).observe(v);
    (route === '/a' ? kept : bh.labels({ route, status })).observe(v);
  }
  // Label order inside braces and line order are free in the format.
  const norm = (t: string) =>
    t
      .split('\n')
      .map((l) => l.replace(/\{([^}]*)\}/, (_, x: string) => `{${x.split(',').sort().join(',')}}`))
      .sort();
  assert.deepEqual(norm(await ours.metrics()), norm(await theirs.metrics()));
  assert.match(await ours.metrics(), /x_seconds_bucket\{route="\/a",status="200",le="0\.01"\} 3/);
  assert.throws(() => kept.observe(NaN), TypeError);
  ours.resetMetrics();
  assert.doesNotMatch(await ours.metrics(), /x_seconds_count/);
});
