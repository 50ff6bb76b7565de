import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pickVictims } from './eviction.js';

const roots = [
  { id: 'a', bytes: 100, lastUsedMs: 3 },
  { id: 'b', bytes: 100, lastUsedMs: 1 },
  { id: 'c', bytes: 100, lastUsedMs: 2 },
];
const none = () => false;

describe('pickVictims', () => {
  it('evicts nothing within the quota', () => {
    assert.deepEqual(pickVictims(roots, 300, none), []);
  });
  it('evicts least recently used first, only as many as needed', () => {
    assert.deepEqual(pickVictims(roots, 250, none), ['b']);
    assert.deepEqual(pickVictims(roots, 100, none), ['b', 'c']);
  });
  it('never picks a spared root, even if the quota stays exceeded', () => {
    assert.deepEqual(pickVictims(roots, 100, (id) => id === 'b'), ['c', 'a']);
    assert.deepEqual(pickVictims(roots, 0, () => true), []);
  });
});
