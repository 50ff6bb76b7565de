// A session stopped while its server is still initializing (a fetch ended and
// restartRoot took it: what a warm-up started before a fetch longer than
// LSPD_FETCH_WAIT_MS meets) is stopped, not failed: the pool must not back its key
// off. Before, the stop closed initialize's connection, that read as a start failure
// ("failed to initialize: the connection is closed"), the key backed off 1 s, and the
// warm-up restarted after the fetch was refused: the root stayed cold (bench/cold's
// rust-analyzer row, whose cargo fetch takes ~0.7 s). The server is a fake that never
// answers initialize (test/fixtures/fake-servers), in the real SERVE jail, so the stop
// lands in initialize every time.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerRow } from '../src/lsp/servers/server-row.js';
import { rootId } from '../src/store/types.js';
import { cannotJail, fixturesDir, lspQuery, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const FAKES_AT = '/opt/fakes';
const row: ServerRow = {
  name: 'fake-never-init',
  languages: ['go'],
  argv: ['/usr/bin/node', `${FAKES_AT}/never-init.mjs`],
  env: {},
  binds: [{ host: join(fixturesDir, 'fake-servers'), at: FAKES_AT }],
  rootMarkers: [],
  readiness: { kind: 'progress' },
  encodings: ['utf-16'],
  maxInFlight: 8,
  probe: async () => ({ available: true, version: 'fake' }),
};
const root = { org: 'acme', repo: 'stop-starting', sha: shaOf('stop-starting') };

describe('a session stopped during its start', { skip }, () => {
  let d: Lspd;
  let tree: string;
  before(async () => {
    d = await startLspd({
      rows: [row],
      env: { LSPD_QUERY_TIMEOUT_MS: '10000', LSPD_INITIALIZE_TIMEOUT_MS: '3000', LSPD_WARM_MAX_SESSIONS: '1', LSPD_SHUTDOWN_TIMEOUT_MS: '500' },
    });
    tree = mkdtempSync(join(tmpdir(), 'lspd-stop-starting-'));
    chmodSync(tree, 0o755);
    writeFileSync(join(tree, 'main.go'), 'package main\n');
  });
  after(async () => {
    await d?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  const until = async (cond: () => Promise<boolean>, ms: number, what: string) => {
    for (const end = Date.now() + ms; !(await cond()); await new Promise((r) => setTimeout(r, 25)))
      if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
  };
  const count = async (name: 'spawns' | 'restarts', labels: Record<string, string>) =>
    (await d.metrics[name].get()).values
      .filter((v) => Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x))
      .reduce((n, v) => n + v.value, 0);

  test('is not a start failure: no back-off, the next query spawns a server at once', async () => {
    const spawns0 = await count('spawns', { server: row.name });
    // A warm-up's session holds no lease, so restartRoot stops it at once, as after a fetch.
    await uploadDir(d.url, root, tree);
    await until(
      async () => (await count('spawns', { server: row.name })) === spawns0 + 1 && d.lsp.pool.sessionsOf(rootId(root)).length === 1,
      15_000,
      'the warm-up spawned its server',
    );
    // The server is up and waiting in initialize (it never answers) when the stop comes.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(d.lsp.pool.restartRoot(rootId(root)), 1);
    await until(async () => d.lsp.pool.sessionsOf(rootId(root)).length === 0, 5_000, 'stopped');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await count('restarts', { server: row.name, reason: 'spawn_failed' }), 0, 'the stop was counted as a failed start');
    // Not refused by a back-off ("failed to start 1 time(s) in a row", at once): a new server is spawned and asked.
    const a = await lspQuery(d.url, { ...root, op: 'definition', path: 'main.go', line: 0, character: 0 });
    assert.equal(a.status, 503, JSON.stringify(a.body));
    assert.match(String(a.body.message), /did not answer initialize within 3000 ms/, JSON.stringify(a.body));
    assert.equal(await count('spawns', { server: row.name }), spawns0 + 2);
  });
});
