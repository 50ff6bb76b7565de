// Issue 30, reproduction 4: the links of an upload cost memory linear in the bytes
// their headers brought. Each target is kept as the one string the header gave and
// walked a segment at a time; held split, a target of 900 short segments costs ten
// times its bytes for the whole upload (20,000 such links held 541 MiB).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EntryChecker } from './entry-check.js';
import { LinkWalker } from './link-walk.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** A long target that stays inside: up out of `l/`, then 900 names that lead to no link. */
const longTarget = (i: number) => `../t${i}/` + 'ab/'.repeat(900) + 'f';

describe('link resolution memory', () => {
  it('retains about the target bytes per link, not their split segments', (t) => {
    const links = 3000;
    const limits = { maxTreeBytes: Infinity, maxTreeFiles: Infinity, maxFileBytes: Infinity };
    const before = heapAfterGc();
    const c = new EntryChecker(limits);
    let targetBytes = 0;
    for (let i = 0; i < links; i++) {
      const target = longTarget(i);
      targetBytes += target.length;
      c.admit({ name: `l/${i}`, type: 'symlink', linkname: target, size: 0 });
    }
    c.verifySymlinks();
    const retained = heapAfterGc() - before;
    assert.ok(c.resolveSteps >= 2 * links * 900, `every target walked on arrival and at the end (${c.resolveSteps} steps)`);
    // The targets themselves (one byte a character), plus a few hundred bytes of
    // bookkeeping per link (its path, trie node, kind); held split they were 2.8x the targets here.
    t.diagnostic(`${retained} bytes retained for ${targetBytes} target bytes`);
    const bound = 1.5 * targetBytes + 512 * links;
    assert.ok(retained < bound, `${retained} bytes retained for ${links} links of ${targetBytes} target bytes (bound ${bound})`);
    assert.ok(c.files === links);
  });

  it('walks a target segment by segment as split would, empty and dot segments included', () => {
    const w = new LinkWalker(() => Infinity);
    w.add('a/l', '../b//./c/');
    assert.equal(w.check('a/l'), undefined);
    // '../b//./c/'.split('/') is ['..', 'b', '', '.', 'c', '']: one step each
    assert.equal(w.steps, 6);
    w.add('up', 'x/../..');
    assert.equal(w.check('up'), 'symlink target leaves the root');
    assert.equal(w.checkTarget('z/q', ''), undefined);
  });
});
