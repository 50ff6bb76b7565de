// A name query is several LSP requests; its deadline bounds all of them together
// (DESIGN.md "One query: 70 s in all"). With a deadline far shorter than a cold
// Python server needs, /ask answers 504 timeout within the bound (it does not
// wait for the server), and in a batch every query times out on its own entry.
// pyright is the server here: a Node program that takes well over the 300 ms
// deadline to start and analyse even on a fast, warm host, so the timeout is certain.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { skipOrFail } from './helpers/host.js';
import { postJson, shaOf, upload } from './helpers/lsp-harness.js';
import { spawnServing, type Serving } from './helpers/daemon.js';

const root = { org: 'acme', repo: 'ask-deadline', sha: shaOf('ask-deadline') };
const TIMEOUT_MS = 400;
let s: Serving | undefined;

before(async () => {
  s = await spawnServing({ env: { LSPD_QUERY_TIMEOUT_MS: String(TIMEOUT_MS), LSPD_CLEANUP_RESERVE_MS: '100' } });
  if (s.notReady) return;
  const r = await upload(s.url, root, 'ask-py');
  assert.equal(r.status, 201, await r.text());
});
after(() => s?.close());

test('a cold query past its deadline answers 504 timeout, on time', { timeout: 60_000 }, async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  const t0 = performance.now();
  const r = await postJson(s!.url, '/ask', { ...root, symbol: 'Server.close', op: 'references' });
  const ms = performance.now() - t0;
  assert.equal(r.status, 504, JSON.stringify(r.body));
  assert.equal(r.body.error, 'timeout');
  assert.doesNotMatch(String(r.body.message), /client went away/);
  assert.ok(ms < TIMEOUT_MS + 1500, `answered after ${Math.round(ms)} ms`);
});

test('in a batch, each query past its deadline gets its own timeout entry', { timeout: 60_000 }, async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  // A fresh root: its sessions are cold again.
  const cold = { ...root, sha: shaOf('ask-deadline-2') };
  assert.equal((await upload(s!.url, cold, 'ask-py')).status, 201);
  const r = await postJson(s!.url, '/ask', { ...cold, queries: [{ symbol: 'pkg.mod.func' }, { symbol: '' }] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const [a, b] = r.body.answers as Record<string, unknown>[];
  assert.equal(a!.error, 'timeout', JSON.stringify(a));
  assert.equal(b!.error, 'bad_request');
});
