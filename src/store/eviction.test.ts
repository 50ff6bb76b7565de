import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orgShareBytes, pickVictims, type Usage } from './eviction.js';

const roots: Usage[] = [
  { id: 'a', org: 'x', bytes: 100, lastUsedMs: 3 },
  { id: 'b', org: 'x', bytes: 100, lastUsedMs: 1 },
  { id: 'c', org: 'x', bytes: 100, lastUsedMs: 2 },
];
const none = () => false;
const only = (globalBytes: number, orgBytes = globalBytes) => ({ globalBytes, orgBytes });

describe('pickVictims, one org', () => {
  it('evicts nothing within the quota', () => {
    assert.deepEqual(pickVictims(roots, only(300), none), []);
  });
  it('evicts least recently used first, only as many as needed', () => {
    assert.deepEqual(pickVictims(roots, only(250), none), ['b']);
    assert.deepEqual(pickVictims(roots, only(100), none), ['b', 'c']);
  });
  it('never picks a spared root, even if the quota stays exceeded', () => {
    assert.deepEqual(
      pickVictims(roots, only(100), (id) => id === 'b'),
      ['c', 'a'],
    );
    assert.deepEqual(
      pickVictims(roots, only(0), () => true),
      [],
    );
  });
  it('alone, an org may use the whole global quota', () => {
    assert.equal(orgShareBytes(only(1000), 1), 1000);
    assert.deepEqual(pickVictims(roots, { globalBytes: 300, orgBytes: 300, grower: 'x' }, none), []);
  });
});

describe('pickVictims, several orgs', () => {
  // Org A floods (four 100-byte roots, the newest just stored), org B has one old small root.
  const flood: Usage[] = [
    { id: 'B/1', org: 'B', bytes: 50, lastUsedMs: 0 },
    { id: 'A/1', org: 'A', bytes: 100, lastUsedMs: 1 },
    { id: 'A/2', org: 'A', bytes: 100, lastUsedMs: 2 },
    { id: 'A/3', org: 'A', bytes: 100, lastUsedMs: 3 },
    { id: 'A/4', org: 'A', bytes: 100, lastUsedMs: 4 },
  ];
  const justStored = (id: string) => id === 'A/4';

  it("an org's upload evicts its own least recently used roots, not an older root of an org within its share", () => {
    assert.deepEqual(pickVictims(flood, { globalBytes: 400, orgBytes: 400, grower: 'A' }, justStored), ['A/1']);
    assert.deepEqual(pickVictims(flood, { globalBytes: 250, orgBytes: 250, grower: 'A' }, justStored), ['A/1', 'A/2']);
  });

  it('without a grower (a restart, a quota lowered), the org above its share still goes first', () => {
    assert.deepEqual(pickVictims(flood, { globalBytes: 400, orgBytes: 400 }, none), ['A/1']);
  });

  it("another org's roots go only while that org is above its share", () => {
    // B grows to 80; A holds 300 of a 300-byte quota shared by two: A is above its 150, B is not.
    const grown = [...flood.filter((r) => r.id !== 'A/4'), { id: 'B/2', org: 'B', bytes: 30, lastUsedMs: 5 }];
    const rule = { globalBytes: 300, orgBytes: 1000, grower: 'B' };
    assert.deepEqual(
      pickVictims(grown, rule, (id) => id === 'B/2'),
      ['A/1'],
    );
    // Every root of A is held: B's upload evicts B's own, never A's, and the quota may stay exceeded.
    const heldA = (id: string) => id.startsWith('A/') || id === 'B/2';
    assert.deepEqual(pickVictims(grown, rule, heldA), ['B/1']);
  });

  it('an org above its own quota loses its own roots even when the store has room', () => {
    assert.deepEqual(pickVictims(flood, { globalBytes: 10_000, orgBytes: 250, grower: 'A' }, justStored), ['A/1', 'A/2']);
    // B is within its quota: untouched.
    assert.ok(!pickVictims(flood, { globalBytes: 10_000, orgBytes: 250 }, none).includes('B/1'));
  });

  it("an org's share is its quota, and no more than the global quota over the orgs storing roots", () => {
    assert.equal(orgShareBytes({ globalBytes: 1000, orgBytes: 800 }, 2), 500);
    assert.equal(orgShareBytes({ globalBytes: 1000, orgBytes: 300 }, 2), 300);
  });
});
