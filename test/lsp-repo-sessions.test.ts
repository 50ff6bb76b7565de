// Sessions across commits of one repo (issue 26): CI pushes commit after commit, and
// each commit's root got sessions of its own that stayed until idle or evicted (two
// commits of playwright held 6 TS sessions, 3.3 GiB). When a newer commit's session
// starts, the same server's idle sessions on older commits of the repo past
// LSPD_REPO_SESSIONS_KEPT (2: this one and the most recently used older one) stop at
// once. Another repo's sessions are not touched. Real daemon, real jail, real TS 7.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, lineOf, lspQuery, position, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const FX = 'ts-basic';
const commit = (n: number) => ({ org: 'acme', repo: 'pushed', sha: shaOf(`repo-sessions-${n}`) });
const other = { org: 'acme', repo: 'elsewhere', sha: shaOf('repo-sessions-other') };

describe('sessions across commits of one repo', { skip }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd();
  });
  after(() => d?.close());

  /** Live TS sessions per root id of the pool (stopped ones are out of the map at once). */
  const live = (repo: string) =>
    d.lsp.pool
      .list()
      .filter((s) => s.key.rootId.startsWith(`acme/${repo}/`) && s.state.kind !== 'stopped' && s.state.kind !== 'failed')
      .map((s) => s.key.rootId);

  const definition = async (root: { org: string; repo: string; sha: string }) => {
    const r = await lspQuery(d.url, { ...root, op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const locs = r.body.locations as { path: string; range: { start: { line: number } } }[];
    assert.deepEqual(
      locs.map((l) => `${l.path}:${l.range.start.line}`),
      [`src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`],
    );
  };

  test('four commits asked in turn keep at most two sessions of the repo; another repo keeps its own', async () => {
    await uploadFixture(d.url, other, FX);
    await definition(other);
    for (let n = 1; n <= 4; n++) {
      await uploadFixture(d.url, commit(n), FX);
      await definition(commit(n));
      await waitFor(() => live('pushed').length <= 2, 10_000);
      const held = live('pushed');
      assert.ok(held.includes(`acme/pushed/${commit(n).sha}`), `the newest commit's session serves: ${held}`);
      if (n >= 2) assert.ok(held.includes(`acme/pushed/${commit(n - 1).sha}`), `the previous commit's is kept: ${held}`);
      assert.ok(held.length <= 2, `commit ${n}: ${held.length} sessions of the repo (${held})`);
    }
    assert.deepEqual(live('elsewhere'), [`acme/elsewhere/${other.sha}`], "another repo's session is not the newer commit's to stop");
    // The oldest commit still answers: a new session starts for it when asked.
    await definition(commit(1));
  });
});
