// /mcp, /ask and /v1/tools behind bearer tokens, on a real lspd: the same token as
// every route; a token limited to some orgs may call tools only on those orgs (the
// org is in each call's arguments, so every call is checked, and a batch's org too);
// no token is 401 before anything runs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { skipOrFail } from './helpers/host.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { hashToken } from '../src/tokens.js';
import { tempDir, spawnServing, type Serving } from './helpers/daemon.js';
import { getJson, postJson, shaOf, upload } from './helpers/lsp-harness.js';

const ACME = 'lspd_test-acme-3f1c9a7e52b04d8e';
const READER = 'lspd_test-read-only-8d2e6b1a';
const ACME_READ = 'lspd_test-acme-read-5b7c0d2e91';
const acme = { org: 'acme', repo: 'mcp-auth', sha: shaOf('mcp-auth') };
const other = { org: 'globex', repo: 'mcp-auth', sha: shaOf('mcp-auth') };
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
let s: Serving | undefined;

before(async () => {
  const path = join(tempDir('lspd-tokens-'), 'tokens.json');
  writeFileSync(
    path,
    JSON.stringify({
      tokens: [
        { name: 'acme', sha256: hashToken(ACME), orgs: ['acme'], permissions: ['upload', 'query'] },
        { name: 'reader', sha256: hashToken(READER), orgs: '*', permissions: ['read'] },
        { name: 'acme-read', sha256: hashToken(ACME_READ), orgs: ['acme'], permissions: ['query', 'read'] },
      ],
    }),
  );
  s = await spawnServing({ env: { LSPD_TOKENS: path } });
  if (s.notReady) return;
  const r = await upload(s.url, acme, 'ask-ts', bearer(ACME));
  assert.equal(r.status, 201, await r.text());
});
after(() => s?.close());

async function connect(headers: Record<string, string>): Promise<Client> {
  const c = new Client({ name: 'lspd-test', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(s!.url + '/mcp'), { requestInit: { headers } }));
  return c;
}

test('no token: 401 on /mcp, /ask and /v1/tools', async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  };
  const r = await fetch(s!.url + '/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(init),
  });
  assert.equal(r.status, 401);
  assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="lspd"');
  assert.equal((await postJson(s!.url, '/ask', { ...acme, symbol: 'greet' })).status, 401);
  assert.equal((await getJson(s!.url, '/v1/tools')).status, 401);
  await assert.rejects(connect({}), /401|nauthorized/);
});

test('a token without the query permission is refused (403)', async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  assert.equal((await getJson(s!.url, '/v1/tools', bearer(READER))).status, 403);
  assert.equal((await postJson(s!.url, '/ask', { ...acme, symbol: 'greet' }, bearer(READER))).status, 403);
  await assert.rejects(connect(bearer(READER)), /403|orbidden/);
});

test('an org-limited token: tools on its org answer, on another org are forbidden', { timeout: 120_000 }, async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  const c = await connect(bearer(ACME));
  try {
    const ok = await c.callTool({ name: 'lsp_locate', arguments: { ...acme, symbol: 'greet' } });
    assert.equal(ok.isError, undefined, JSON.stringify(ok.content));
    assert.equal((ok.structuredContent as { locations: { module: string }[] }).locations[0]!.module, 'greeter');
    for (const [name, args] of [
      ['lsp_locate', { ...other, symbol: 'greet' }],
      ['lsp_ask_batch', { ...other, queries: [{ symbol: 'greet' }] }],
      ['lsp_hover', { ...other, path: 'src/main.ts', line: 0, character: 0 }],
    ] as const) {
      const res = await c.callTool({ name, arguments: args });
      assert.equal(res.isError, true, name);
      assert.equal((res.structuredContent as { error: string }).error, 'forbidden', name);
      assert.equal((res.structuredContent as { status: number }).status, 403, name);
    }
  } finally {
    await c.close();
  }
  // The HTTP route agrees, for a single query and a batch.
  assert.equal((await postJson(s!.url, '/ask', { ...other, symbol: 'greet' }, bearer(ACME))).status, 403);
  assert.equal((await postJson(s!.url, '/ask', { ...other, queries: [{ symbol: 'greet' }] }, bearer(ACME))).status, 403);
  assert.equal((await postJson(s!.url, '/ask', { ...acme, queries: [{ symbol: 'greet' }] }, bearer(ACME))).status, 200);
});

test('read_file needs what its route needs: read, on the org', { timeout: 120_000 }, async (t) => {
  if (s?.notReady) return t.skip(skipOrFail(`the jail could not be proved on this host: ${s.notReady}`));
  const files = `/v1/roots/${acme.org}/${acme.repo}/${acme.sha}/files/src/main.ts?start=0&end=2`;
  const args = { ...acme, path: 'src/main.ts', start: 0, end: 2 };
  const withRead = await connect(bearer(ACME_READ));
  const queryOnly = await connect(bearer(ACME));
  try {
    const ok = await withRead.callTool({ name: 'read_file', arguments: args });
    assert.equal(ok.isError, undefined, JSON.stringify(ok.content));
    assert.deepEqual(ok.structuredContent, (await getJson(s!.url, files, bearer(ACME_READ))).body);
    const other = await withRead.callTool({ name: 'read_file', arguments: { ...args, org: 'globex' } });
    assert.equal((other.structuredContent as { error: string }).error, 'forbidden');
    // query but not read: the tool refuses as the route does.
    const refused = await queryOnly.callTool({ name: 'read_file', arguments: args });
    assert.equal(refused.isError, true);
    assert.deepEqual(refused.structuredContent, { ...(await getJson(s!.url, files, bearer(ACME))).body, status: 403 });
  } finally {
    await withRead.close();
    await queryOnly.close();
  }
});
