// The uid pool: one host uid per live jail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UidPool } from './uid-pool.js';

test('one uid per live jail, round-robin, busy when exhausted, double release is a bug', () => {
  const p = new UidPool(200_000, 3);
  const a = p.acquire();
  const b = p.acquire();
  const c = p.acquire();
  assert.deepEqual([a, b, c], [200_000, 200_001, 200_002]);
  assert.throws(() => p.acquire(), { code: 'busy', status: 503 });
  p.release(b);
  assert.equal(p.acquire(), b);
  p.release(a);
  p.release(c);
  assert.equal(p.acquire(), c, 'round-robin goes on after the last uid handed out');
  p.release(c);
  assert.throws(() => p.release(c));
  assert.ok(p.contains(200_002) && !p.contains(200_003) && !p.contains(199_999));
  assert.throws(() => new UidPool(0, 10), 'uid 0 is never in a pool');
});

test('per-org shares: alone all but the reserve, a newcomer gets a uid at once, a freed uid goes to the org under its share', () => {
  const refused: string[] = [];
  const p = new UidPool(200_000, 8, { share: { orgCap: 0, reservePercent: 12 }, onRefused: (org) => refused.push(org) });
  const a = Array.from({ length: 7 }, () => p.acquire('a'));
  assert.throws(() => p.acquire('a'), { code: 'busy', status: 503, message: /Org a already runs 7 jails, its share/ });
  const b = p.acquire('b');
  assert.equal(p.inUse, 8);
  p.release(a[0]!);
  assert.throws(() => p.acquire('a'), { code: 'busy' });
  assert.equal(p.acquire('b'), a[0], 'the freed uid goes to b');
  p.release(b);
  assert.deepEqual(refused, ['a', 'a']);
});

test('a fixed per-org cap (never below the 2 uids one org needs)', () => {
  const p = new UidPool(200_000, 8, { share: { orgCap: 1, reservePercent: 12 } });
  p.acquire('a');
  p.acquire('a');
  assert.throws(() => p.acquire('a'), { code: 'busy', message: /its limit \(LSPD_ORG_JAIL_UIDS\)/ });
  p.acquire('b');
});
