// A session a warm-up starts is a guess: nobody waits for it yet. Its jail runs at a
// low CPU weight among the org's jails until a query leases it, so the session a
// query waits on gets the cores (bench/monorepo on playwright: five sessions warmed
// at the 201 on 2 cores took the first in-tree answer from 1.0 s bare to 6.1-7.1 s).
// And a newer commit's warm-up stops an older commit's sessions no query ever leased,
// whatever LSPD_REPO_SESSIONS_KEPT keeps (those of asked ones stay).
// Real daemon, real jail, real cgroups, real TS 7.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Session } from '../src/lsp/session/session.js';
import { cpuWeightOf } from './helpers/cgroup.js';
import { cannotJail, lineOf, lspQuery, position, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const FX = 'ts-basic';
const commit = (n: number) => ({ org: 'acme', repo: 'guessed', sha: shaOf(`warm-guess-${n}`) });
const idOf = (r: { org: string; repo: string; sha: string }) => `${r.org}/${r.repo}/${r.sha}`;

describe('warm sessions are guesses', { skip }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd({ env: { LSPD_WARM_MAX_SESSIONS: '4' } });
  });
  after(() => d?.close());

  const sessionOf = (r: { org: string; repo: string; sha: string }) =>
    d.lsp.pool.list().find((s) => s.key.rootId === idOf(r) && s.state.kind !== 'stopped' && s.state.kind !== 'failed');
  const warmed = async (r: { org: string; repo: string; sha: string }): Promise<Session> => {
    assert.ok(await waitFor(() => sessionOf(r)?.warm === 'warmed', 60_000), `${idOf(r)} was warmed`);
    return sessionOf(r)!;
  };
  const pidOf = (s: Session) => {
    const st = s.state;
    assert.equal(st.kind, 'ready');
    return (st as { proc: { pid: number } }).proc.pid;
  };
  const definition = async (r: { org: string; repo: string; sha: string }) => {
    const a = await lspQuery(d.url, { ...r, op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const locs = a.body.locations as { path: string; range: { start: { line: number } } }[];
    assert.deepEqual(
      locs.map((l) => `${l.path}:${l.range.start.line}`),
      [`src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`],
    );
  };

  test('a warm session runs at a low CPU weight until a query leases it', async () => {
    await uploadFixture(d.url, commit(1), FX);
    const s = await warmed(commit(1));
    assert.equal(cpuWeightOf(pidOf(s)), 1 / 16, 'nobody asked yet');
    assert.equal(s.asked, false);
    await definition(commit(1));
    assert.equal(sessionOf(commit(1)), s, 'the warm session answered');
    assert.equal(cpuWeightOf(pidOf(s)), 1, 'the default weight once a query leased it');
  });

  test("a newer commit's warm-up stops the older commits' sessions nobody asked, and keeps an asked one", async () => {
    // commit 1 was asked (above); commit 2 is only warmed.
    await uploadFixture(d.url, commit(2), FX);
    const guess = await warmed(commit(2));
    assert.ok(sessionOf(commit(1)), 'commit 1 kept: asked, and within LSPD_REPO_SESSIONS_KEPT');
    await uploadFixture(d.url, commit(3), FX);
    await warmed(commit(3));
    assert.ok(await waitFor(() => sessionOf(commit(2)) === undefined, 10_000), "commit 2's guess stopped");
    assert.equal(guess.state.kind, 'stopped');
    assert.ok(sessionOf(commit(1)), 'the asked older commit kept (the two kept: commit 3 and it)');
    // The stopped commit still answers: a session starts for it when asked.
    await definition(commit(2));
  });
});
