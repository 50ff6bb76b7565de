import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AFTER_START_MS, StartingJails } from './gates.js';

test('StartingJails: quiet only once no jail is starting and the last start ended AFTER_START_MS ago', () => {
  const s = new StartingJails();
  const a = {};
  const b = {};
  assert.equal(s.quiet(1000), true, 'nothing ever started');
  s.add(a);
  s.add(b);
  assert.equal(s.quiet(1000), false);
  s.delete(a, 1000);
  assert.equal(s.quiet(2000), false, 'b is still starting');
  s.delete(b, 2000);
  assert.equal(s.quiet(2000 + AFTER_START_MS - 1), false, 'b has just answered: its query is still being sent');
  assert.equal(s.quiet(2000 + AFTER_START_MS), true);
  s.delete(b, 5000);
  assert.equal(s.quiet(2000 + AFTER_START_MS), true, 'a second delete (its exit after its first answer) is not a new end');
});
