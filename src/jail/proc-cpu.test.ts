import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuSpent, cpuTimes } from './proc-cpu.js';

test('cpuTimes reads a live process, skips a gone one; cpuSpent counts pids in both readings only', () => {
  assert.equal(cpuTimes(Array.from({ length: 65 }, () => process.pid)), undefined, 'more processes than it reads: no reading');
  const before = cpuTimes([process.pid, 2 ** 22 + 7])!;
  assert.deepEqual([...before.keys()], [process.pid], 'a pid that does not exist is left out');
  const until = performance.now() + 120;
  while (performance.now() < until) Math.sqrt(Math.random()); // spin: CPU this process spends
  const after = cpuTimes([process.pid])!;
  const spent = cpuSpent(before, after);
  assert.ok(spent >= 60 && spent <= 1000, `spent ${spent} ms of CPU spinning 120 ms`);
  assert.equal(cpuSpent(new Map([[1, 5]]), new Map([[2, 50]])), 0, 'a process in one reading only counts nothing');
  assert.equal(cpuSpent(new Map([[1, 50]]), new Map([[1, 40]])), 0, 'a reused pid reading less is not negative time');
});
