// Every route that takes a root key applies API.md's one rule: a sha that is not 40
// or 64 lowercase hex digits (a branch name, say) is 400 bad_sha, and a bad org or
// repo is 400 bad_name, whether the key is in the path or in a JSON body.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { SHA } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

let s: StoreServer;
before(async () => {
  s = await startStoreServer();
});
after(() => s.destroy());

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; error: string }> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  } else if (method === 'PUT') {
    init.body = new Uint8Array(1024);
    init.headers = { 'content-type': 'application/x-tar' };
  }
  const r = await fetch(s.url + path, init);
  return { status: r.status, error: ((await r.json()) as { error: string }).error };
}

const good = { org: 'acme', repo: 'api', sha: SHA(1) };
const bad = [
  { key: { ...good, sha: 'main' }, error: 'bad_sha' },
  { key: { ...good, sha: 'ABCDEF'.repeat(6) + 'ABCD' }, error: 'bad_sha' },
  { key: { ...good, org: 'a b' }, error: 'bad_name' },
  { key: { ...good, repo: '-x' }, error: 'bad_name' },
];

test('path routes: PUT, GET and DELETE', async () => {
  for (const { key, error } of bad) {
    const path = `/v1/roots/${encodeURIComponent(key.org)}/${encodeURIComponent(key.repo)}/${key.sha}`;
    for (const method of ['PUT', 'GET', 'DELETE']) {
      assert.deepEqual({ ...(await send(method, path)), path }, { status: 400, error, path }, method);
    }
  }
});

test('the files route: GET .../files/{path}', async () => {
  for (const { key, error } of bad) {
    const path = `/v1/roots/${encodeURIComponent(key.org)}/${encodeURIComponent(key.repo)}/${key.sha}/files/src/a.ts`;
    assert.deepEqual({ ...(await send('GET', path)), path }, { status: 400, error, path });
  }
});

test('body routes: /v1/code/lsp, /ask and an /ask batch', async () => {
  for (const { key, error } of [...bad, { key: { ...good, org: '..' }, error: 'bad_name' }]) {
    assert.deepEqual(
      await send('POST', '/v1/code/lsp', { ...key, op: 'hover', path: 'a.ts', line: 0, character: 0 }),
      { status: 400, error },
      JSON.stringify(key),
    );
    assert.deepEqual(await send('POST', '/ask', { ...key, symbol: 'greet' }), { status: 400, error }, JSON.stringify(key));
    assert.deepEqual(await send('POST', '/ask', { ...key, queries: [{ symbol: 'greet' }] }), { status: 400, error }, JSON.stringify(key));
  }
});

test('anything else wrong in a body stays bad_request naming the field', async () => {
  assert.deepEqual(await send('POST', '/v1/code/lsp', { ...good, op: 'nope', path: 'a.ts' }), { status: 400, error: 'bad_request' });
});
