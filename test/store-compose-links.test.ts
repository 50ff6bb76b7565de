// Issue 30, reproduction 4 against a real daemon: a small layer on a base of many
// links with long targets. The base's links are walked once on arrival and once at
// the end (2 steps a segment); composing the head walks each of them once more,
// not once per link it passes, so the head's steps (logged in 'root stored') are
// about one per segment of the base's targets; /livez is answered throughout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { spawnDaemon, type Daemon } from './helpers/daemon.js';
import { SHA, packTar, walk, type PackEntry } from './store-helpers.js';
import { jailUidEnv } from './helpers/uids.js';

const LINKS = 4000;
const SEGMENTS = 900;

/** Links under l/, each up out of l/ and down 900 names that lead to no link (a target of ~2.7 KB). */
function longLinks(): PackEntry[] {
  const entries: PackEntry[] = [{ name: 'README.md', data: '# base\n' }];
  for (let i = 0; i < LINKS; i++) entries.push({ name: `l/${i}`, type: 'symlink', linkname: `../t${i}/` + 'ab/'.repeat(SEGMENTS) + 'f' });
  return entries;
}
const SEGMENTS_PER_LINK = SEGMENTS + 3; // '..', 't<i>', the 'ab's, 'f'

async function putWatchingLivez(
  d: Daemon,
  path: string,
  body: Buffer,
): Promise<{ status: number; body: Record<string, unknown>; polls: number; unanswered: number }> {
  let done = false;
  let polls = 0;
  let unanswered = 0;
  const watch = (async () => {
    while (!done) {
      polls++;
      const r = await fetch(`${d.url}/livez`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
      if (r?.status !== 200) unanswered++;
      await r?.arrayBuffer();
      await new Promise((res) => setTimeout(res, 5));
    }
  })();
  try {
    const r = await fetch(`${d.url}/v1/roots/${path}`, { method: 'PUT', body, headers: { 'content-type': 'application/gzip' } });
    return { status: r.status, body: (await r.json()) as Record<string, unknown>, polls, unanswered };
  } finally {
    done = true;
    await watch;
  }
}

const stepsOf = (d: Daemon, sha: string) => Number(d.logs.find((l) => l.msg === 'root stored' && String(l.root).endsWith(sha))?.resolveSteps);

describe('reproduction 4: a layer on a base of long links', () => {
  let d: Daemon;
  before(async () => {
    d = await spawnDaemon({ env: { ...jailUidEnv(64) }, timeoutMs: 60_000 });
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('composes in one walk of the base links, /livez answered meanwhile', async () => {
    const base = gzipSync(await packTar(longLinks()));
    const b = await putWatchingLivez(d, `acme/links/${SHA(1)}?warm=false`, base);
    assert.equal(b.status, 201, JSON.stringify(b.body));
    const targetSegments = LINKS * SEGMENTS_PER_LINK;
    assert.equal(stepsOf(d, SHA(1)), 2 * targetSegments, 'each target walked on arrival and at the end');

    const layer = gzipSync(
      await packTar([
        { name: 'src/new.ts', data: 'export const n = 1;\n'.repeat(500) },
        { name: '.wh.README.md', data: '' },
      ]),
    );
    assert.ok(layer.length < 10_000);
    const h = await putWatchingLivez(d, `acme/links/${SHA(2)}?base=${SHA(1)}&warm=false`, layer);
    assert.equal(h.status, 201, JSON.stringify(h.body));
    assert.equal(h.body.files, LINKS + 1);
    assert.equal(stepsOf(d, SHA(2)), targetSegments, 'the composed tree walks each base link once');
    assert.equal(h.unanswered, 0, `${h.unanswered} of ${h.polls} /livez polls unanswered`);
    assert.deepEqual(
      walk(d.dataDir).filter((p) => p.startsWith('staging/') || p.startsWith('trash/')),
      [],
    );
  });
});
