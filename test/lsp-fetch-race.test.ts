// A query that chose its session while the root's fetch ran is answered by that
// session, made without the dependencies, even when the fetch ends before the answer
// does (the session is replaced only once released). Such an answer says `running`
// and `may_change`, and is not cached: the next ask lands in the fetched package.
// bench/monorepo found it: a one-file commit's dependency definition, asked while its
// base's packages were being linked in, was cached noted `done` and landed on the
// import for as long as the root.
// Real daemon, real jail, real TS server; the npm registry is the test's, on 127.0.0.1,
// held until the test lets it answer. The test holds the session's in-flight slots so
// the query is, deterministically, between its lease and its answer when the fetch ends.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gatedRegistry, startNpmRegistry, type GatedRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import { assertLeftPadDefinition } from './helpers/npm-dep.js';
import { cannotJail, fetchSettled, lspQuery, position, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();

describe('an answer from a session chosen while the fetch ran', { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let gate: GatedRegistry;
  const root = { org: 'acme', repo: 'npm-dep', sha: shaOf('fetch-race-npm') };
  const id = `${root.org}/${root.repo}/${root.sha}`;
  const depQuestion = { ...root, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', "require('left-pad-lite')", 9) };

  before(async () => {
    registry = await startNpmRegistry();
    gate = await gatedRegistry(registry);
    d = await startLspd({ env: { LSPD_NPM_REGISTRY: gate.url, LSPD_FETCH_REGISTRIES: gate.authority } });
  });
  after(async () => {
    await d?.close();
    await gate?.close();
    await registry?.close();
  });

  test('says running, is not cached, and the next ask lands in the package', async () => {
    await uploadFixture(d.url, root, 'npm-dep');
    // A first answer starts the session on the tree alone.
    const first = await lspQuery(d.url, { ...root, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', 'leftPad(') });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.dependencies, { state: 'running', may_change: true });
    const [session] = d.lsp.pool.list().filter((s) => s.key.rootId === id);
    assert.ok(session, 'one session on the tree alone');

    // Every in-flight slot held: the next query leases the session, then waits for a slot.
    const ac = new AbortController();
    const slots = await Promise.all(Array.from({ length: session.row.maxInFlight }, () => session.slot(ac.signal)));
    const leasesBefore = session.leases;
    const pending = lspQuery(d.url, depQuestion);
    assert.ok(await waitFor(() => session.leases > leasesBefore, 20_000), 'the query leased the session');

    // The fetch ends while that query holds its lease.
    gate.release();
    const view = await fetchSettled(d.url, root);
    assert.equal(view.state, 'done', JSON.stringify(view));
    slots.forEach((release) => release());

    const stale = await pending;
    assert.equal(stale.status, 200, JSON.stringify(stale.body));
    assert.ok(!(stale.body.locations as { external?: boolean }[]).some((l) => l.external), 'made by the session without the package');
    assert.deepEqual(stale.body.dependencies, { state: 'running', may_change: true }, 'it says so, though the fetch has ended');

    // Not cached: asked again, the fresh session answers from the package.
    await assertLeftPadDefinition(d.url, root);
  });
});
