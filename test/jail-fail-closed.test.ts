// Fail closed: a daemon whose jail cannot be proved answers /readyz 503 with the
// reason, refuses every query that would start a server with 503 not_ready, and
// starts no jailed process; and Jail.spawn itself refuses an unproved phase (so a
// route that forgot to look at readiness still runs nothing unconfined).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pack } from 'tar-stream';
import { spawnDaemon, type Daemon } from './helpers/daemon.js';
import { cannotJail, jailCommands, pidsOfUids, privateUidBase, startJail, UID_COUNT } from './helpers/jail.js';

const skip = cannotJail();
const WRONG_HELPER = join(import.meta.dirname, 'fixtures', 'jail', 'fetch-filter-for-serve.sh');
const SHA = 'a'.repeat(40);

async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const p = pack();
  for (const [name, text] of Object.entries(files)) p.entry({ name }, text);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const CASES = [
  {
    name: 'the seccomp helper is missing',
    env: { LSPD_JAIL_HELPER_PATH: '/nonexistent/lspd-seccomp' },
    serve: /seccomp helper is missing/,
    fetch: /seccomp helper is missing/,
  },
  {
    name: 'bubblewrap is missing',
    env: { LSPD_BWRAP_PATH: '/nonexistent/bwrap' },
    serve: /bubblewrap is not installed/,
    fetch: /bubblewrap is not installed/,
  },
  {
    name: 'the helper emits the FETCH filter for SERVE',
    env: { LSPD_JAIL_HELPER_PATH: WRONG_HELPER },
    serve: /SERVE was given a socket/,
    fetch: undefined,
  },
] as const;

describe('fail closed: daemon', { skip }, () => {
  const daemons: Daemon[] = [];
  after(async () => {
    for (const d of daemons) {
      await d.stop();
      d.cleanup();
    }
  });

  for (const c of CASES) {
    test(`${c.name}: /readyz 503, queries not_ready, no jail started`, { timeout: 60_000 }, async () => {
      const uidBase = privateUidBase();
      const d = await spawnDaemon({ env: { ...c.env, LSPD_JAIL_UID_BASE: String(uidBase), LSPD_JAIL_UID_COUNT: String(UID_COUNT) } });
      daemons.push(d);

      const ready = await fetch(`${d.url}/readyz`);
      assert.equal(ready.status, 503);
      const body = (await ready.json()) as { ready: boolean; reason: string; jail: Record<string, { ok: boolean; reason?: string }> };
      assert.equal(body.ready, false);
      assert.equal(body.jail.serve!.ok, false);
      assert.match(body.jail.serve!.reason!, c.serve);
      if (c.fetch) assert.match(body.jail.fetch!.reason!, c.fetch);
      else assert.equal(body.jail.fetch!.ok, true, 'FETCH still has its own filter and passes');
      assert.match(body.reason, /^serve jail: /);
      assert.doesNotMatch(JSON.stringify(body), new RegExp(d.dataDir), 'no data-dir path in the answer');

      const metrics = await (await fetch(`${d.url}/metrics`)).text();
      assert.match(metrics, /lspd_jail_canary\{phase="serve"\} 0/);

      // A stored root, then a query that would start a server: refused, nothing spawned.
      const put = await fetch(`${d.url}/v1/roots/acme/api/${SHA}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/x-tar' },
        body: await tarOf({ 'a.ts': 'export const x = 1;\n' }),
      });
      assert.ok(put.status === 201 || put.status === 200, `upload: ${put.status}`);
      const q = await fetch(`${d.url}/v1/code/lsp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ org: 'acme', repo: 'api', sha: SHA, op: 'hover', path: 'a.ts', line: 0, character: 13 }),
      });
      assert.equal(q.status, 503);
      assert.equal(((await q.json()) as { error: string }).error, 'not_ready');
      if (c.fetch) {
        assert.deepEqual(pidsOfUids(uidBase, UID_COUNT), [], 'no process runs as a jail uid');
      } else {
        // FETCH was proved, so the upload's dependency fetch may run; no SERVE jail may.
        const serveJails = jailCommands(uidBase, UID_COUNT).filter((argv) => !argv[0]?.endsWith('/lspd-egress-fwd'));
        assert.deepEqual(serveJails, [], 'no language server was started');
      }
    });
  }
});

describe('fail closed: Jail.spawn refuses an unproved phase', { skip }, () => {
  test('a helper that emits the FETCH filter for SERVE: SERVE refused, FETCH runs', async () => {
    const t = await startJail({ LSPD_JAIL_HELPER_PATH: WRONG_HELPER });
    try {
      assert.equal(t.jail.verdicts.serve.ok, false);
      assert.match(t.jail.verdicts.serve.reason!, /SERVE was given a socket/);
      await assert.rejects(t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/true'] }), { code: 'not_ready', status: 503 });
      const j = await t.jail.spawn({ phase: 'fetch', argv: ['/usr/bin/true'] });
      assert.equal((await j.exited).code, 0);
    } finally {
      await t.close();
    }
  });

  test('bubblewrap missing: both phases refused, with the reason', async () => {
    const t = await startJail({ LSPD_BWRAP_PATH: '/nonexistent/bwrap' });
    try {
      for (const phase of ['serve', 'fetch'] as const) {
        const v = t.jail.verdicts[phase];
        assert.match(v.ok ? 'proved' : v.reason, /bubblewrap is not installed/);
        await assert.rejects(t.jail.spawn({ phase, argv: ['/usr/bin/true'] }), (err: Error & { code?: string }) => {
          assert.equal(err.code, 'not_ready');
          assert.match(err.message, /bubblewrap is not installed/);
          return true;
        });
      }
    } finally {
      await t.close();
    }
  });

  test('a closed jail refuses to spawn', async () => {
    const t = await startJail();
    await t.close();
    await assert.rejects(t.jail.spawn({ phase: 'serve', argv: ['/usr/bin/true'] }), { code: 'shutting_down' });
  });
});
