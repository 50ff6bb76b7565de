// Issue 30, reproduction 4: composing a small layer on a base of many long links
// costs work linear in the base's links (each target walked once, a step a
// segment) and hands the event loop back while it works, counted in steps and in
// turns of the loop, never in time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compose } from './compose.js';
import type { TreeEntry } from './tree-index.js';

const ID = '0'.repeat(40);
const limits = { maxTreeBytes: 1 << 30, maxTreeFiles: 1_000_000, maxFileBytes: 1 << 30 };
const SEGMENTS = 900;

/** A base of `n` links under l/, each to a long path that stays inside, and one file. */
function base(n: number): TreeEntry[] {
  const out: TreeEntry[] = [{ path: 'l', kind: 'dir' }];
  for (let i = 0; i < n; i++) out.push({ path: `l/${i}`, kind: 'symlink', target: `../t${i}/` + 'ab/'.repeat(SEGMENTS) + 'f', id: ID });
  out.push({ path: 'README.md', kind: 'file', size: 10, id: ID });
  return out;
}

const layer = { entries: [{ path: 'src/new.ts', kind: 'file' as const, size: 100, id: ID }], whiteouts: ['README.md'], opaques: [] };

/** Compose while counting the turns the event loop got meanwhile. */
async function composeCountingTurns(b: TreeEntry[]) {
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const c = await compose(b, layer, limits);
    return { c, turns };
  } finally {
    running = false;
  }
}

describe('compose on a base of long links', () => {
  it('walks each base link once: steps grow with the links, not their square', async () => {
    const small = await composeCountingTurns(base(1000));
    const large = await composeCountingTurns(base(4000));
    const perLink = SEGMENTS + 3; // '..', 't<i>', the 'ab's and 'f'
    assert.equal(small.c.resolveSteps, 1000 * perLink);
    assert.equal(large.c.resolveSteps, 4000 * perLink);
    assert.equal(large.c.fromBase.length, 4001, 'the l dir and every link are kept; README.md is whited out');
    assert.deepEqual(large.c.changed.sort(), ['README.md', 'src', 'src/new.ts']);
  });

  it('hands the event loop back during the walk, at least once per 65,536 steps', async () => {
    const { c, turns } = await composeCountingTurns(base(4000));
    assert.ok(turns >= Math.floor(c.resolveSteps / 65_536), `${turns} turns of the loop for ${c.resolveSteps} steps`);
  });

  it('still refuses a link the layer turns into an escape', async () => {
    const b: TreeEntry[] = [
      { path: 'a', kind: 'dir' },
      { path: 'a/up', kind: 'symlink', target: '../q/..', id: ID },
    ];
    await assert.rejects(compose(b, { entries: [{ path: 'q', kind: 'symlink', target: '..', id: ID }], whiteouts: [], opaques: [] }, limits), (e: unknown) => {
      return (e as { code?: string }).code === 'unsafe_entry';
    });
  });
});
