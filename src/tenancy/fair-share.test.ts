// The fair-share rule and the round-robin queue: pure, so every case is counted here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FairShare, OrgQueue, shareLimits, shareVerdict } from './fair-share.js';

const takeAll = (s: FairShare, org: string): number => {
  let n = 0;
  while (s.take(org) === undefined) n++;
  return n;
};

test('limits: reserve ≥ 1 and ≤ C, a fixed cap never below the floor, 0 = no fixed cap', () => {
  assert.deepEqual({ ...shareLimits(256, { orgCap: 0, reservePercent: 12, floor: 1 }) }, { capacity: 256, reserve: 31, orgCap: 256, floor: 1 });
  assert.equal(shareLimits(2, { orgCap: 0, reservePercent: 12, floor: 1 }).reserve, 1);
  assert.equal(shareLimits(2, { orgCap: 0, reservePercent: 100, floor: 1 }).reserve, 2);
  assert.equal(shareLimits(64, { orgCap: 1, reservePercent: 12, floor: 2 }).orgCap, 2);
  assert.equal(shareLimits(64, { orgCap: 1000, reservePercent: 12, floor: 2 }).orgCap, 64);
  assert.equal(shareLimits(1, { orgCap: 0, reservePercent: 12, floor: 2 }).floor, 1);
  assert.throws(() => shareLimits(0, { orgCap: 0, reservePercent: 12, floor: 1 }));
});

test('a reserve of 0% turns shares off: first come, first served, fixed caps still hold', () => {
  const s = new FairShare(shareLimits(4, { orgCap: 0, reservePercent: 0, floor: 1 }));
  assert.equal(takeAll(s, 'a'), 4);
  assert.equal(s.check('b'), 'full');
  const capped = new FairShare(shareLimits(4, { orgCap: 3, reservePercent: 0, floor: 1 }));
  assert.equal(takeAll(capped, 'a'), 3);
  assert.equal(capped.check('a'), 'cap');
});

test('alone, an org takes everything but the reserve; a newcomer gets the reserve at once', () => {
  const s = new FairShare(shareLimits(64, { orgCap: 0, reservePercent: 12, floor: 1 })); // R = 8
  assert.equal(takeAll(s, 'a'), 56);
  assert.equal(s.check('a'), 'share');
  assert.equal(takeAll(s, 'b'), 8, 'the reserve, at once');
  assert.equal(s.check('b'), 'full');
  // a gives one back: a is far over its share (64/3), so the unit goes to b, not back to a.
  s.give('a');
  assert.equal(s.check('a'), 'share');
  assert.equal(s.take('b'), undefined);
  // a drains to its share; from there a is refused until b leaves room past the reserve.
  for (let i = 0; i < 40; i++) s.give('a');
  assert.equal([s.held('a'), s.held('b'), s.total].join(), '15,9,24');
  assert.equal(takeAll(s, 'a'), 56 - 24, 'past the reserve again, a may grow');
  assert.equal(s.total, 56);
  assert.equal(takeAll(s, 'b'), 8, 'b, under its share (21), takes the reserve');
});

test('a third org gets room too: every org under its share C/(others+2) is served while one floods', () => {
  const l = shareLimits(256, { orgCap: 0, reservePercent: 12, floor: 1 });
  const s = new FairShare(l);
  takeAll(s, 'flood');
  assert.equal(s.held('flood'), 256 - 31);
  assert.equal(s.take('b'), undefined);
  assert.equal(s.take('c'), undefined);
  assert.equal(s.check('flood'), 'share');
});

test('the floor: an org holding less than what it needs is refused only when nothing is free', () => {
  const s = new FairShare(shareLimits(8, { orgCap: 0, reservePercent: 50, floor: 2 })); // R = 4
  assert.equal(takeAll(s, 'a'), 4);
  // b: two by the floor, a third under its share (8/3); c: the last unit by the floor.
  assert.equal(takeAll(s, 'b'), 3);
  assert.equal(takeAll(s, 'c'), 1);
  assert.equal(s.check('d'), 'full');
  s.give('a');
  assert.equal(s.check('b'), 'share', 'b (3) is over its share 8/4 now');
  assert.equal(s.take('c'), undefined, 'c (1) is under its floor');
});

test('a fixed cap bounds an org even on an idle daemon', () => {
  const s = new FairShare(shareLimits(64, { orgCap: 10, reservePercent: 12, floor: 1 }));
  assert.equal(takeAll(s, 'a'), 10);
  assert.equal(s.check('a'), 'cap');
  assert.equal(s.take('b'), undefined);
});

test('one slot (fetch concurrency 1) is first come, the rule never leaves it idle for a lone org', () => {
  const l = shareLimits(1, { orgCap: 0, reservePercent: 12, floor: 1 });
  assert.equal(shareVerdict(l, 0, 0, 0), undefined);
  assert.equal(shareVerdict(l, 0, 1, 1), 'full');
  const two = shareLimits(2, { orgCap: 0, reservePercent: 12, floor: 1 }); // R = 1
  assert.equal(shareVerdict(two, 1, 1, 0), 'share', 'a lone org keeps the second slot for a newcomer');
  assert.equal(shareVerdict(two, 0, 1, 1), undefined, 'which a newcomer gets');
});

test('give back what was never taken is a bug; orgs that hold nothing are forgotten', () => {
  const s = new FairShare(shareLimits(4, { orgCap: 0, reservePercent: 25, floor: 1 }));
  assert.throws(() => s.give('a'));
  s.take('a');
  s.give('a');
  assert.deepEqual([...s.entries()], []);
  assert.equal(s.others('b'), 0);
});

test('OrgQueue: round-robin between orgs, FIFO within one, skipping orgs that may not take', () => {
  const q = new OrgQueue<string>();
  for (let i = 1; i <= 4; i++) q.push('a', `a${i}`);
  q.push('b', 'b1');
  q.push('c', 'c1');
  q.push('b', 'b2');
  const order: string[] = [];
  for (let x = q.next(); x; x = q.next()) order.push(x.item);
  assert.deepEqual(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
  assert.equal(q.size, 0);

  q.push('a', 'a1');
  q.push('a', 'a2');
  q.push('b', 'b1');
  assert.equal(q.next((org) => org !== 'a')?.item, 'b1', 'a is at its share: b goes first');
  assert.equal(
    q.next((org) => org !== 'a'),
    undefined,
  );
  assert.equal(q.remove('a', 'a1'), true);
  assert.equal(q.remove('a', 'a1'), false);
  assert.equal(q.size, 1);
  assert.deepEqual(q.next(), { org: 'a', item: 'a2' });
});

test('OrgQueue: an org whose queue ran empty and refilled waits for the orgs not served since', () => {
  const q = new OrgQueue<string>();
  q.push('a', 'a1');
  assert.equal(q.next()?.item, 'a1');
  q.push('a', 'a2');
  q.push('a', 'a3');
  q.push('b', 'b1');
  const order: string[] = [];
  for (let x = q.next(); x; x = q.next()) order.push(x.item);
  assert.deepEqual(order, ['b1', 'a2', 'a3']);
});
