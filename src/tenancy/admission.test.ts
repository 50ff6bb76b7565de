// The one way in: its order (not_ready, busy, need_tree) for every op, and each
// refusal counted under the route that was asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Admission, ops, type AdmitOp } from './admission.js';
import { loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { Health } from '../health.js';
import { HeapBudget } from './heap-budget.js';
import { createMetrics } from '../metrics.js';
import type { RootInfo, RootKey } from '../store/types.js';

const stored: RootKey = { org: 'acme', repo: 'web', sha: 'a'.repeat(40) };
const missing: RootKey = { org: 'acme', repo: 'web', sha: 'b'.repeat(40) };

function setUp(o: { ready?: boolean; heapFraction?: number; env?: Record<string, string> } = {}) {
  const config = loadConfig({ LSPD_DATA: '/nonexistent/lspd-data', ...o.env });
  const metrics = createMetrics();
  const health = new Health();
  if (o.ready !== false) health.jail = { serve: { ok: true }, fetch: { ok: true } };
  else health.jail = { serve: { ok: false, reason: 'bwrap failed under /nonexistent/lspd-data/jail' }, fetch: { ok: true } };
  const info = { root: stored, generation: 'g1' } as unknown as RootInfo;
  const store = { get: (k: RootKey) => (k.sha === stored.sha ? info : undefined) };
  const heap = new HeapBudget({ config: { heapBudgetFraction: o.heapFraction ?? 1 }, metrics });
  return { admission: new Admission({ config, health, store, metrics, heap }), metrics, info };
}

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    return `${err.status} ${err.code}`;
  }
  return 'admitted';
};

async function rejected(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.rejected.get()).values) out[String(v.labels.route)] = v.value;
  return out;
}

const served: [string, AdmitOp][] = [
  ['query', ops.query],
  ['ask', ops.ask],
  ['diff', ops.diff],
  ['check', ops.check],
];

test('a stored root is admitted and its info returned; several keys return theirs in order', () => {
  const { admission, info } = setUp();
  for (const [, op] of [...served, ['read', ops.read] as const]) assert.equal(admission.admit(stored, op), info);
  assert.deepEqual(admission.admit([stored, stored], ops.diff), [info, info]);
  assert.equal(admission.reads.held('acme'), 1, 'a read holds its slot until the reader gives it back');
});

test('order: not_ready before busy before need_tree, for every op that starts a server', async () => {
  // Not ready and past the heap budget and the root missing: not_ready wins, and nothing is counted busy.
  const down = setUp({ ready: false, heapFraction: 0.0001 });
  for (const [name, op] of served)
    assert.equal(
      codeOf(() => down.admission.admit(missing, op)),
      '503 not_ready',
      name,
    );
  assert.deepEqual(await rejected(down.metrics), {});
  // The not_ready reason quotes no host path.
  assert.doesNotMatch(
    (() => {
      try {
        down.admission.admit(stored, ops.query);
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    })(),
    /\/nonexistent\/lspd-data/,
  );

  // Ready, past the heap budget, the root missing: busy before need_tree for what holds heap.
  const full = setUp({ heapFraction: 0.0001 });
  for (const op of [ops.diff, ops.check])
    assert.equal(
      codeOf(() => full.admission.admit(missing, op)),
      '503 busy',
      op.route,
    );
  assert.deepEqual(await rejected(full.metrics), { '/v1/diff': 1, '/v1/check': 1 });

  // Ready, room everywhere, the root missing: need_tree; a diff names the missing one.
  const ok = setUp();
  for (const [name, op] of served)
    assert.equal(
      codeOf(() => ok.admission.admit(missing, op)),
      '409 need_tree',
      name,
    );
  try {
    ok.admission.admit([stored, missing], ops.diff);
    assert.fail('admitted a diff whose head is missing');
  } catch (err) {
    assert.ok(err instanceof AppError);
    assert.deepEqual([err.code, err.extra.missing, err.extra.root], ['need_tree', 'head', missing]);
  }
});

test('the query wait queue: an org past its share is refused before need_tree, counted under the asking route', async () => {
  const { admission, metrics } = setUp({ env: { LSPD_MAX_QUEUED_QUERIES: '4', LSPD_ORG_MAX_QUEUED_QUERIES: '1' } });
  admission.wait('acme', ops.query.route); // acme holds its one place
  assert.equal(
    codeOf(() => admission.admit(missing, ops.query)),
    '503 busy',
  );
  assert.equal(
    codeOf(() => admission.admit(missing, ops.ask)),
    '503 busy',
  );
  // /ask's own LSP questions are queries, counted under /ask; so are the diff's and the check's.
  assert.equal(
    codeOf(() => admission.admit(stored, ops.query, ops.diff.route)),
    '503 busy',
  );
  assert.equal(
    codeOf(() => admission.wait('acme', ops.check.route)),
    '503 busy',
  );
  assert.deepEqual(await rejected(metrics), { '/v1/code/lsp': 1, '/ask': 1, '/v1/diff': 1, '/v1/check': 1 });
  // Another org is not held back by acme's share.
  assert.equal(
    codeOf(() => admission.admit({ ...missing, org: 'globex' }, ops.query)),
    '409 need_tree',
  );
  admission.queue.give('acme');
  assert.equal(
    codeOf(() => admission.admit(missing, ops.query)),
    '409 need_tree',
  );
  // Every query that passed the jail check is counted for its org, refused or not.
  const queries = (await metrics.orgQueries.get()).values.reduce((n, v) => n + v.value, 0);
  assert.equal(queries, 4, 'ops.query four times; ops.ask is the /ask entry, its queries count as they run');
});

test('file reads: no jail needed, busy past the read slots, a missing root is 404 and gives its slot back', async () => {
  const { admission, metrics } = setUp({ ready: false, env: { LSPD_MAX_FILE_READS: '1' } });
  assert.equal(
    codeOf(() => admission.admit(missing, ops.read)),
    '404 not_found',
  );
  assert.equal(admission.reads.held('acme'), 0);
  admission.admit(stored, ops.read);
  assert.equal(
    codeOf(() => admission.admit(stored, ops.read)),
    '503 busy',
  );
  assert.deepEqual(await rejected(metrics), { [ops.read.route]: 1 });
  admission.reads.give('acme');
  admission.admit(stored, ops.read);
});
