import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getHeapStatistics } from 'node:v8';
import { isAppError } from '../errors.js';
import { HeapBudget } from './heap-budget.js';
import { createMetrics } from '../metrics.js';

const total = async (c: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string>) =>
  (await c.get()).values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);

test("the budget is a fraction of V8's heap limit; under it everything is admitted, uncounted", async () => {
  const metrics = createMetrics();
  const b = new HeapBudget({ config: { heapBudgetFraction: 1 }, metrics });
  assert.equal(b.limitBytes, getHeapStatistics().heap_size_limit);
  assert.equal(b.budgetBytes, b.limitBytes);
  for (const work of ['upload', 'diff', 'walk'] as const) assert.equal(b.refusal(work, 'acme'), undefined);
  assert.equal(await total(metrics.heapRefusals, {}), 0);
});

test('past it: 503 busy with retry_after, counted by work and by org (by route: src/tenancy/admission.ts)', async () => {
  const metrics = createMetrics();
  const b = new HeapBudget({ config: { heapBudgetFraction: 0.0001 }, metrics });
  assert.ok(b.usedBytes() > b.budgetBytes, 'a running process is past a ten-thousandth of its limit');
  const err = b.refusal('diff', 'acme');
  assert.ok(isAppError(err));
  assert.deepEqual([err.status, err.code, err.extra.retry_after], [503, 'busy', 5]);
  assert.match(err.message, /new diffs .*LSPD_HEAP_BUDGET_FRACTION|LSPD_HEAP_BUDGET_FRACTION.*new diffs/);
  assert.ok(b.refusal('upload', 'beta'));
  assert.equal(await total(metrics.heapRefusals, { work: 'diff' }), 1);
  assert.equal(await total(metrics.heapRefusals, { work: 'upload' }), 1);
  assert.equal(await total(metrics.orgRefusals, { org: 'acme', reason: 'heap' }), 1);
});
