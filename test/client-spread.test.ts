// lspd/client's route keys, seen from the wire (a local stub stands in for the
// ingress; test/scale-out.test.ts runs the same through real nginx and lspd):
// every root request carries x-lspd-route-key; a spread repo's query, its 409
// upload and its retry share one key; deleteRoot reaches every key; `lspd push
// --spread N` uploads under each of the N keys in order.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LspdClient, ROUTE_KEY_HEADER, routeKey } from '../src/client/index.js';
import { tempDir } from './helpers/daemon.js';
import { gitRepo, runCli } from './helpers/ops.js';

const SHA = 'a'.repeat(40);
const KEY = { org: 'acme', repo: 'mono', sha: SHA };

interface Seen {
  method: string;
  url: string;
  key: string | undefined;
}

describe('route keys on the wire', () => {
  let server: Server;
  let url: string;
  const seen: Seen[] = [];
  /** Route keys whose replica "holds" the root (a PUT under the key stores it there). */
  const holds = new Set<string>();

  before(async () => {
    server = createServer((req: IncomingMessage, res) => {
      req.resume();
      req.on('end', () => {
        const key = req.headers[ROUTE_KEY_HEADER] as string | undefined;
        seen.push({ method: req.method!, url: req.url!, key });
        res.setHeader('content-type', 'application/json');
        if (req.method === 'PUT') {
          holds.add(key ?? '');
          res.statusCode = 201;
          res.end(JSON.stringify({ root: KEY, created: true, files: 1, bytes: 1, languages: [], fetch: { state: 'none' } }));
        } else if (req.method === 'DELETE') {
          res.statusCode = holds.delete(key ?? '') ? 204 : 404;
          res.end(res.statusCode === 404 ? JSON.stringify({ error: 'not_found', message: 'No such root.' }) : undefined);
        } else if (!holds.has(key ?? '')) {
          res.statusCode = 409;
          res.end(JSON.stringify({ error: 'need_tree', message: 'Upload it.', need: 'tree' }));
        } else {
          res.end(JSON.stringify({ locations: [], total: 0 }));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('names shard 0 by the plain key and the others by #k', () => {
    assert.equal(routeKey(KEY), 'acme/mono');
    assert.equal(routeKey(KEY, 0), 'acme/mono');
    assert.equal(routeKey(KEY, 2), 'acme/mono#2');
  });

  it("sends a spread repo's query, its 409 upload and its retry under one key, and uses every key", async () => {
    const c = new LspdClient({ url, spread: { 'acme/mono': 3 } });
    seen.length = 0;
    holds.clear();
    let uploads = 0;
    try {
      for (let i = 0; i < 60; i++) {
        await c.lsp({ ...KEY, op: 'documentSymbols', path: 'a.ts' }, { tree: () => (uploads++, Buffer.alloc(1024)) });
      }
    } finally {
      await c.close();
    }
    const keys = new Set(seen.map((s) => s.key));
    assert.deepEqual([...keys].sort(), ['acme/mono', 'acme/mono#1', 'acme/mono#2']);
    assert.equal(uploads, 3, 'one upload per key');
    for (let i = 0; i < seen.length; i++) {
      if (seen[i]!.method !== 'PUT') continue;
      // 409 before, PUT, the retry: all under one key.
      assert.deepEqual([seen[i - 1]!.key, seen[i + 1]!.key], [seen[i]!.key, seen[i]!.key]);
    }
  });

  it('keeps a repo that is not spread on its plain key, and deletes a spread one under every key', async () => {
    const c = new LspdClient({ url, spread: { 'acme/mono': 3 } });
    seen.length = 0;
    try {
      await c.lsp({ ...KEY, repo: 'other', op: 'documentSymbols', path: 'a.ts' }, { tree: Buffer.alloc(10) });
      assert.deepEqual(new Set(seen.map((s) => s.key)), new Set(['acme/other']));
      seen.length = 0;
      await c.deleteRoot(KEY);
      assert.deepEqual(
        seen.map((s) => `${s.method} ${s.key}`),
        ['DELETE acme/mono', 'DELETE acme/mono#1', 'DELETE acme/mono#2'],
      );
      await assert.rejects(c.deleteRoot(KEY), (err: Error & { code?: string }) => err.code === 'not_found');
    } finally {
      await c.close();
    }
  });

  it('`lspd push --spread 3` uploads under each key in order', async () => {
    const repo = tempDir('lspd-spread-push-');
    gitRepo(repo, { 'a.ts': 'export const a = 1;\n' });
    seen.length = 0;
    const r = await runCli(['push', '--org', 'acme', '--repo', 'mono', '--spread', '3', '--url', url], { cwd: repo });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.key}`),
      ['PUT acme/mono', 'PUT acme/mono#1', 'PUT acme/mono#2'],
    );
    assert.equal(r.stdout.trim().split('\n').length, 3);
    const bad = await runCli(['push', '--org', 'acme', '--spread', '0', '--url', url], { cwd: repo });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--spread: a whole number 1-64/);
  });
});
