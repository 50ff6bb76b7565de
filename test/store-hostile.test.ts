// Reproduction 1 of issue 13 against a real daemon: a 1 KB gzip'd tar of 40
// chained symlinks, each target hundreds of segments long, once held the event
// loop for 16 s (every other org's requests waited with it). Now its symlink
// resolution is linear: the upload is stored, the steps it took (logged by the
// daemon) are bounded by the tar's bytes, and /livez is answered all along. A tar
// built to defeat the memo is refused 422 unsafe_entry naming the entry, once its
// steps pass the budget. The bound is a work counter, never a clock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { spawnDaemon, type Daemon } from './helpers/daemon.js';
import { SHA, packTar, walk, type PackEntry } from './store-helpers.js';
import { jailUidEnv } from './helpers/uids.js';
import { putWatchingLivez } from './helpers/livez-watch.js';

/** 40 links, each climbing `depth` names and back, then naming the previous one (through a directory of its own when `bump`). */
function chain(n: number, depth: number, bump: boolean): PackEntry[] {
  const entries: PackEntry[] = [{ name: 'f', data: 'x' }];
  for (let i = 0; i < n; i++) {
    const via = bump ? `../d${i + 1}/../` : '../';
    entries.push({ name: `d${i}/l`, type: 'symlink', linkname: via + 'x/'.repeat(depth) + '../'.repeat(depth) + (i % 40 === 0 ? 'f' : `d${i - 1}/l`) });
  }
  return entries;
}

describe('reproduction 1: a small tar of chained symlinks costs bounded work', () => {
  let d: Daemon;
  before(async () => {
    // Jail uids from this helper's fixed range (the daemon proves its jail at start).
    d = await spawnDaemon({ env: { ...jailUidEnv(64) }, timeoutMs: 60_000 });
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('stores the 1 KB chain tar in steps linear in its bytes, /livez answered meanwhile', async () => {
    const tar = await packTar(chain(40, 500, false));
    const gz = gzipSync(tar, { level: 9 });
    assert.ok(gz.length < 1100, `the hostile tar is ${gz.length} bytes gzip'd`);
    const r = await putWatchingLivez(d, `acme/sym/${SHA(1)}`, gz);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.files, 41);
    assert.equal(r.unanswered, 0, `${r.unanswered} of ${r.polls} /livez polls unanswered`);
    assert.ok(r.polls >= 1);
    const stored = d.logs.find((l) => l.msg === 'root stored' && String(l.root).includes('/sym/'));
    assert.ok(stored, 'the daemon logged the stored root');
    // Each target walked once on arrival and once at the end, each link met after
    // that one step through its memo: at most a couple of steps per byte of the tar.
    const steps = Number(stored.resolveSteps);
    assert.ok(steps > 0 && steps <= 2 * tar.length, `${steps} resolution steps for a ${tar.length}-byte tar`);
  });

  it('refuses 422 unsafe_entry, naming the entry, a tar whose links pass the step budget; nothing stored', async () => {
    const tar = await packTar(chain(400, 500, true));
    const gz = gzipSync(tar, { level: 9 });
    const r = await putWatchingLivez(d, `acme/sym/${SHA(2)}`, gz);
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error, 'unsafe_entry');
    assert.match(String(r.body.entry), /^d\d+\/l$/);
    assert.match(String(r.body.reason), /too many steps/);
    assert.equal(r.unanswered, 0, `${r.unanswered} of ${r.polls} /livez polls unanswered`);
    assert.deepEqual(
      walk(d.dataDir).filter((p) => p.includes(SHA(2)) || p.startsWith('staging/') || p.startsWith('trash/')),
      [],
    );
  });
});
