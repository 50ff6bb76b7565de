import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuBandwidth } from './cgroup.js';

test('the CPU period grows (to 1 s at most) until one quota holds the burst, which the kernel requires', () => {
  assert.deepEqual(cpuBandwidth(1000, 0), { periodUs: 100_000, quotaUs: 100_000, burstUs: 0 }, "no burst: the kernel's default period");
  assert.deepEqual(cpuBandwidth(1000, 50), { periodUs: 100_000, quotaUs: 100_000, burstUs: 50_000 }, 'a burst one default period holds');
  assert.deepEqual(cpuBandwidth(1000, 1000), { periodUs: 1_000_000, quotaUs: 1_000_000, burstUs: 1_000_000 });
  assert.deepEqual(cpuBandwidth(2000, 1000), { periodUs: 500_000, quotaUs: 1_000_000, burstUs: 1_000_000 }, 'two CPUs fill the quota in half the time');
  assert.deepEqual(cpuBandwidth(100, 5000), { periodUs: 1_000_000, quotaUs: 100_000, burstUs: 100_000 }, 'past 1 s the burst is cut to one quota');
  assert.deepEqual(cpuBandwidth(5, 0), { periodUs: 100_000, quotaUs: 1000, burstUs: 0 }, "the kernel's smallest quota is 1 ms");
});
