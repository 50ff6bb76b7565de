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
