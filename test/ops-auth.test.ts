// Auth against a real daemon: the 401/403 matrix of API.md, org checks in the URL
// and in the body, listings filtered by org, public probes, tokens never logged,
// SIGHUP reload (a good file replaces the tokens, a bad one keeps them), and a bad
// tokens file refusing to start.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnDaemon, tempDir, type Daemon } from './helpers/daemon.js';
import { SHA1, SHA2, makeTar, until, writeTokens, type TestToken } from './helpers/ops.js';

const admin: TestToken = { secret: 'lspd_admin-0123456789abcdefghijklmnop', name: 'admin', orgs: '*', permissions: ['upload', 'query', 'read', 'delete'] };
const acmeRw: TestToken = { secret: 'lspd_acme-rw-0123456789abcdefghijklm', name: 'acme-rw', orgs: ['acme'], permissions: ['upload', 'query', 'read'] };
const acmeRo: TestToken = { secret: 'lspd_acme-ro-0123456789abcdefghijklm', name: 'acme-ro', orgs: ['acme'], permissions: ['read', 'query'] };
const acmeUp: TestToken = { secret: 'lspd_acme-up-0123456789abcdefghijklm', name: 'acme-up', orgs: ['acme'], permissions: ['upload'] };
const later: TestToken = { secret: 'lspd_later-0123456789abcdefghijklmnop', name: 'later', orgs: ['globex'], permissions: ['read'] };

describe('auth', () => {
  let d: Daemon;
  let tokensPath: string;
  let tar: Buffer;

  const req = (method: string, path: string, token?: string, body?: { json?: unknown; tar?: Buffer }) =>
    fetch(d.url + path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body?.json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(body?.tar ? { 'content-type': 'application/x-tar' } : {}),
      },
      body: body?.json !== undefined ? JSON.stringify(body.json) : body?.tar,
    });
  const status = async (r: Promise<Response>) => (await r).status;
  /** Send the daemon SIGHUP and wait until it logs `msg` once more than before. */
  const sighupUntilLogged = async (msg: string) => {
    const logged = () => d.logs.filter((l) => l.msg === msg).length;
    const seen = logged();
    d.child.kill('SIGHUP');
    await until(() => logged() > seen, msg);
  };

  before(async () => {
    tokensPath = join(tempDir('lspd-tokens-'), 'tokens.json');
    writeTokens(tokensPath, [admin, acmeRw, acmeRo, acmeUp]);
    tar = await makeTar({ 'README.md': '# hello\n', 'src/a.ts': 'export const a = 1;\n' });
    d = await spawnDaemon({ env: { LSPD_TOKENS: tokensPath } });
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('answers 401 unauthorized without a token or with a wrong one', async () => {
    for (const token of [undefined, 'lspd_not-a-token', '']) {
      const r = await req('GET', `/v1/roots/acme/api/${SHA1}`, token);
      assert.equal(r.status, 401);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="lspd"');
      const body = (await r.json()) as { error: string; message: string };
      assert.equal(body.error, 'unauthorized');
      assert.match(body.message, /token/);
    }
    // A malformed header is no token at all.
    const r = await fetch(`${d.url}/v1/roots`, { headers: { authorization: `Basic ${admin.secret}` } });
    assert.equal(r.status, 401);
    // Upload without a token: refused before the body matters.
    assert.equal(await status(req('PUT', `/v1/roots/acme/api/${SHA1}`, undefined, { tar })), 401);
  });

  it('answers 403 forbidden for another org or a missing permission, and lets a good token through', async () => {
    // Read-only token on upload.
    const ro = await req('PUT', `/v1/roots/acme/api/${SHA1}`, acmeRo.secret, { tar });
    assert.equal(ro.status, 403);
    assert.equal(((await ro.json()) as { error: string }).error, 'forbidden');
    // Token for acme on another org's root.
    assert.equal(await status(req('PUT', `/v1/roots/globex/api/${SHA1}`, acmeRw.secret, { tar })), 403);
    assert.equal(await status(req('GET', `/v1/roots/globex/api/${SHA1}`, acmeRo.secret)), 403);
    // The good token uploads, the read-only one reads.
    assert.equal(await status(req('PUT', `/v1/roots/acme/api/${SHA1}`, acmeRw.secret, { tar })), 201);
    assert.equal(await status(req('GET', `/v1/roots/acme/api/${SHA1}`, acmeRo.secret)), 200);
    // Nobody but a token with `delete` deletes.
    assert.equal(await status(req('DELETE', `/v1/roots/acme/api/${SHA1}`, acmeRw.secret)), 403);
    assert.equal(await status(req('PUT', `/v1/roots/globex/web/${SHA2}`, admin.secret, { tar })), 201);
  });

  it('checks the org of a JSON body after parsing', async () => {
    const q = (org: unknown) => ({ org, repo: 'api', sha: SHA1, op: 'documentSymbols', path: 'src/a.ts' });
    assert.equal(await status(req('POST', '/v1/code/lsp', acmeRo.secret, { json: q('globex') })), 403);
    assert.equal(await status(req('POST', '/ask', acmeRo.secret, { json: { org: 'globex', repo: 'api', sha: SHA1, symbol: 'a' } })), 403);
    // A body naming no org cannot be checked: a limited token is refused, not waved through.
    assert.equal(await status(req('POST', '/v1/code/lsp', acmeRo.secret, { json: { repo: 'api' } })), 403);
    // The right org passes auth; what the route answers is its own business.
    const ok = await status(req('POST', '/v1/code/lsp', acmeRo.secret, { json: q('acme') }));
    assert.ok(![401, 403].includes(ok), `status ${ok}`);
    // A token without `query` may not query, even its own org.
    assert.equal(await status(req('POST', '/v1/code/lsp', acmeUp.secret, { json: q('acme') })), 403);
  });

  it('filters listings to the orgs a token may touch', async () => {
    const list = async (token: string) =>
      ((await (await req('GET', '/v1/roots', token)).json()) as { roots: { root: { org: string } }[] }).roots.map((r) => r.root.org).sort();
    assert.deepEqual(await list(admin.secret), ['acme', 'globex']);
    assert.deepEqual(await list(acmeRo.secret), ['acme']);
  });

  it('keeps /livez, /readyz, /metrics and /docs public', async () => {
    assert.equal(await status(req('GET', '/livez')), 200);
    assert.ok([200, 503].includes(await status(req('GET', '/readyz'))));
    assert.equal(await status(req('GET', '/metrics')), 200);
    assert.equal(await status(req('GET', '/docs/json')), 200);
    // An unknown route needs a token too: no route map for strangers.
    assert.equal(await status(req('GET', '/nope')), 401);
    assert.equal(await status(req('GET', '/nope', admin.secret)), 404);
  });

  it('never logs a token', () => {
    const text = JSON.stringify(d.logs);
    for (const t of [admin, acmeRw, acmeRo, acmeUp]) assert.ok(!text.includes(t.secret), `${t.name} leaked into the logs`);
  });

  it('reloads the tokens file on SIGHUP, and keeps the old tokens when the new file is bad', async () => {
    assert.equal(await status(req('GET', `/v1/roots/globex/web/${SHA2}`, later.secret)), 401);
    writeTokens(tokensPath, [admin, acmeRo, later]);
    await sighupUntilLogged('tokens reloaded');
    assert.equal(await status(req('GET', `/v1/roots/globex/web/${SHA2}`, later.secret)), 200);
    // acme-rw was dropped from the file: it no longer works.
    assert.equal(await status(req('GET', `/v1/roots/acme/api/${SHA1}`, acmeRw.secret)), 401);

    // A plaintext token in the file is refused, like any bad file: old tokens stay.
    writeFileSync(tokensPath, JSON.stringify({ tokens: [{ name: 'x', token: 'plaintext', orgs: '*', permissions: ['read'] }] }));
    await sighupUntilLogged('tokens file rejected, keeping the previous tokens');
    assert.equal(await status(req('GET', `/v1/roots/globex/web/${SHA2}`, later.secret)), 200);
    assert.equal(await status(req('GET', `/v1/roots/acme/api/${SHA1}`, acmeRo.secret)), 200);
    assert.ok(!JSON.stringify(d.logs).includes('plaintext'), "the rejected file's content was logged");
  });
});

describe('auth at start', () => {
  it('refuses to start with a bad tokens file', async () => {
    const path = join(tempDir('lspd-tokens-'), 'tokens.json');
    writeFileSync(path, '{"tokens": [{"name": "a", "sha256": "not-hex", "orgs": "*", "permissions": ["read"]}]}');
    await assert.rejects(spawnDaemon({ env: { LSPD_TOKENS: path } }), /exited 2 before listening/);
    await assert.rejects(spawnDaemon({ env: { LSPD_TOKENS: join(tempDir(), 'missing.json') } }), /exited 2 before listening/);
  });

  it('refuses to listen off loopback without tokens', async () => {
    await assert.rejects(spawnDaemon({ env: { LSPD_LISTEN: '0.0.0.0:0' } }), /exited 2 before listening/);
  });
});
