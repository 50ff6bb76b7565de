// GET /v1/roots/{org}/{repo}/{sha}/files/{path} over real HTTP (issue 14 part 2):
// - on a daemon without a jail (the route needs none): a range of a tree file and
//   a whole file with exact text and total_lines (\n, \r\n and \r as LSP counts),
//   truncation by LSPD_MAX_ANSWER_BYTES at a line boundary, a single line too long
//   cut and marked partial, 404 no_such_file / not_found, 400 for bad paths (raw
//   `..`, absolute, NUL) and bad keys, 413 past LSPD_MAX_FILE_BYTES, 415 not_utf8, a link inside the tree read
//   and a link planted to point outside refused, the access rule of GET on a root,
//   and `lspd show` through bin/lspd.js;
// - with a real daemon in the real jail: an npm dependency fetched from a registry
//   on 127.0.0.1, a definition answering `external` with `read`, and that file read
//   through the route and through the read_file tool over /mcp, alike; a link the
//   fetch could have left pointing out of node_modules, and a deps file outside
//   what SERVE binds, refused.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SHA, packTar, type PackEntry } from './store-helpers.js';
import { gitRepo, runCli, writeTokens, type TestToken } from './helpers/ops.js';
import { tempDir, startStoreServer, type StoreServer } from './helpers/daemon.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';
import type { FileAnswer } from '../src/api/responses.js';
import { cannotJail, fetchSettled, getJson, lspQuery, position, startLspd, uploadFixture, type Lspd } from './helpers/lsp-harness.js';

const TEN = Array.from({ length: 10 }, (_, i) => `line ${i} of a.ts`).join('\n') + '\n';
const BIG = Array.from({ length: 200 }, (_, i) => `${String(i).padStart(3, '0')} ${'x'.repeat(40)}`).join('\n') + '\n';
const LONG = 'y'.repeat(5000);
const TREE: PackEntry[] = [
  { name: 'src/a.ts', data: TEN },
  { name: 'crlf.txt', data: 'a\r\nb\rc\n' },
  { name: 'big.txt', data: BIG },
  { name: 'long.txt', data: LONG },
  { name: 'quote.txt', data: 'say "hi"\\\n\u00e9t\u00e9 \u{1F600}\n' },
  { name: 'latin1.txt', data: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]) },
  { name: 'empty.txt', data: '' },
  { name: 'links/to-a.ts', type: 'symlink', linkname: '../src/a.ts' },
];
const MAX_ANSWER_BYTES = 2048;
const MAX_FILE_BYTES = 64 * 1024;

/** GET with the path sent byte for byte (fetch() would resolve `..` before sending). */
function rawGet(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('files route on a stored tree', () => {
  let s: StoreServer;
  let repo: string;
  let key: { org: string; repo: string; sha: string };
  let base: string;
  const get = (rel: string, q = '') => rawGet(s.url, `${base}/files/${rel}${q}`);

  before(async () => {
    s = await startStoreServer({ env: { LSPD_MAX_ANSWER_BYTES: String(MAX_ANSWER_BYTES), LSPD_MAX_FILE_BYTES: String(MAX_FILE_BYTES) } });
    // A real commit, so `lspd show` can name the root the way it names any (its sha in a checkout).
    repo = tempDir('lspd-files-repo-');
    const sha = gitRepo(repo, { 'src/a.ts': TEN });
    key = { org: 'acme', repo: 'files', sha };
    base = `/v1/roots/acme/files/${sha}`;
    const r = await fetch(`${s.url}${base}`, { method: 'PUT', headers: { 'content-type': 'application/x-tar' }, body: await packTar(TREE) });
    assert.equal(r.status, 201, await r.text());
  });
  after(() => s?.destroy());

  test('a range of a tree file: exact lines, zero-based, end exclusive, total_lines', async () => {
    const r = await get('src/a.ts', '?start=2&end=5');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      path: 'src/a.ts',
      start: 2,
      end: 5,
      total_lines: 11, // ten lines and the empty one after the last newline, as LSP counts
      text: 'line 2 of a.ts\nline 3 of a.ts\nline 4 of a.ts\n',
      truncated: false,
      untrusted: true,
    });
  });

  test('a whole file, and the ends of ranges: past the end clamps, end before start is 400', async () => {
    assert.deepEqual(await get('src/a.ts'), {
      status: 200,
      body: { path: 'src/a.ts', start: 0, end: 11, total_lines: 11, text: TEN, truncated: false, untrusted: true },
    });
    const tail = await get('src/a.ts', '?start=9&end=100');
    assert.deepEqual([tail.body.start, tail.body.end, tail.body.text], [9, 11, 'line 9 of a.ts\n']);
    const past = await get('src/a.ts', '?start=50');
    assert.deepEqual([past.body.start, past.body.end, past.body.text, past.body.total_lines], [11, 11, '', 11]);
    const empty = await get('empty.txt');
    assert.deepEqual([empty.body.total_lines, empty.body.text, empty.body.end], [1, '', 1]);
    const bad = await get('src/a.ts', '?start=5&end=2');
    assert.deepEqual([bad.status, bad.body.error], [400, 'bad_request']);
    const nan = await get('src/a.ts', '?start=two');
    assert.deepEqual([nan.status, nan.body.error], [400, 'bad_request']);
  });

  test('\\r\\n and \\r end lines too; terminators and escapes come back as they are', async () => {
    const r = await get('crlf.txt', '?start=1&end=3');
    assert.deepEqual([r.body.text, r.body.total_lines], ['b\rc\n', 4]);
    const q = await get('quote.txt');
    assert.equal(q.body.text, 'say "hi"\\\n\u00e9t\u00e9 \u{1F600}\n');
  });

  test('LSPD_MAX_ANSWER_BYTES cuts at a line boundary and says so; a line too long alone is cut inside, marked partial', async () => {
    const res = await fetch(`${s.url}${base}/files/big.txt`);
    const raw = await res.text();
    assert.ok(Buffer.byteLength(raw) <= MAX_ANSWER_BYTES, `${Buffer.byteLength(raw)} bytes`);
    const a = JSON.parse(raw) as FileAnswer;
    assert.equal(a.truncated, true);
    assert.equal(a.total_lines, 201);
    assert.ok(a.end > 20 && a.end < 200, String(a.end));
    assert.equal(
      a.text,
      BIG.split('\n')
        .slice(0, a.end)
        .map((l) => l + '\n')
        .join(''),
      'whole lines, the first `end` of them',
    );
    // Continuing from `end` gives the next lines.
    const next = (await get('big.txt', `?start=${a.end}`)).body as FileAnswer;
    assert.ok(next.text.startsWith(`${String(a.end).padStart(3, '0')} `), next.text.slice(0, 10));

    const long = await fetch(`${s.url}${base}/files/long.txt`);
    const longRaw = await long.text();
    assert.ok(Buffer.byteLength(longRaw) <= MAX_ANSWER_BYTES);
    const l = JSON.parse(longRaw) as FileAnswer;
    assert.deepEqual([l.truncated, l.partial, l.start, l.end, l.total_lines], [true, true, 0, 1, 1]);
    assert.ok(l.text.length > 1000 && LONG.startsWith(l.text), String(l.text.length));
  });

  test('404 no_such_file for a missing file or a directory; 404 not_found for a root not stored', async () => {
    for (const rel of ['src/nope.ts', 'src', 'nope/deeper/x.ts']) {
      const r = await get(rel);
      assert.deepEqual([r.status, r.body.error], [404, 'no_such_file'], rel);
    }
    const r = await rawGet(s.url, `/v1/roots/acme/files/${SHA(9)}/files/src/a.ts`);
    assert.deepEqual([r.status, r.body.error, r.body.need], [404, 'not_found', 'tree']);
  });

  test('400 for a path that is absolute, walks up, or holds a control character; bad_sha / bad_name for a bad key', async () => {
    for (const rel of [
      '../../../../etc/passwd',
      'src/../../x',
      '%2E%2E/%2E%2E/etc/passwd',
      '/etc/passwd',
      '%2Fetc%2Fpasswd',
      'src/a%00.ts',
      'src/a%0A.ts',
      'src%5Ca.ts',
    ]) {
      const r = await get(rel);
      assert.deepEqual([r.status, r.body.error], [400, 'bad_request'], `${rel}: ${JSON.stringify(r.body)}`);
      assert.doesNotMatch(JSON.stringify(r.body), /root:x:0/);
    }
    const sha = await rawGet(s.url, `/v1/roots/acme/files/main/files/src/a.ts`);
    assert.deepEqual([sha.status, sha.body.error], [400, 'bad_sha']);
    const name = await rawGet(s.url, `/v1/roots/a%20b/files/${key.sha}/files/src/a.ts`);
    assert.deepEqual([name.status, name.body.error], [400, 'bad_name']);
  });

  test('413 file_too_large past LSPD_MAX_FILE_BYTES, even for one line', async () => {
    // The upload limit is the same setting, so the file is put there behind the store's back.
    writeFileSync(join(s.store.treeDir(key), 'huge.txt'), 'z\n'.repeat(MAX_FILE_BYTES));
    const r = await get('huge.txt', '?start=0&end=1');
    assert.deepEqual([r.status, r.body.error], [413, 'file_too_large']);
    rmSync(join(s.store.treeDir(key), 'huge.txt'));
  });

  test('415 not_utf8 for a file that is not UTF-8, whatever lines are asked', async () => {
    for (const q of ['', '?start=0&end=1']) {
      const r = await get('latin1.txt', q);
      assert.deepEqual([r.status, r.body.error], [415, 'not_utf8']);
    }
  });

  test('a link inside the tree is read; one pointing outside (planted past the store) is no_such_file', async () => {
    const inside = await get('links/to-a.ts', '?start=0&end=1');
    assert.deepEqual([inside.status, inside.body.text], [200, 'line 0 of a.ts\n']);
    // The store refuses such a link in an upload; this one is put there behind its back.
    const secret = join(mkdtempSync(join(tmpdir(), 'lspd-files-outside-')), 'secret.txt');
    writeFileSync(secret, 'outside the root\n');
    const tree = s.store.treeDir(key);
    symlinkSync(secret, join(tree, 'escape.txt'));
    symlinkSync('../../../../../../../../../../../../..', join(tree, 'up'));
    for (const rel of ['escape.txt', `up${secret}`]) {
      const r = await get(rel);
      assert.deepEqual([r.status, r.body.error], [404, 'no_such_file'], rel);
      assert.doesNotMatch(JSON.stringify(r.body), /outside the root/);
    }
    rmSync(join(tree, 'escape.txt'));
    rmSync(join(tree, 'up'));
  });

  test('?from=deps of a root with nothing fetched is no_such_file, never a tree file', async () => {
    const r = await get('src/a.ts', '?from=deps');
    assert.deepEqual([r.status, r.body.error], [404, 'no_such_file']);
    const bad = await get('src/a.ts', '?from=host');
    assert.deepEqual([bad.status, bad.body.error], [400, 'bad_request']);
  });

  test('lspd show PATH:START-END prints the lines (1-based, inclusive), names the root like lspd lsp', async () => {
    const r = await runCli(['show', 'src/a.ts:2-3', '--org', 'acme', '--repo', 'files', '--url', s.url], { cwd: repo });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'line 1 of a.ts\nline 2 of a.ts\n');
    const j = await runCli(['show', 'big.txt', '--json', '--org', 'acme', '--repo', 'files', '--url', s.url], { cwd: repo });
    assert.equal(j.code, 0, j.stderr);
    const a = JSON.parse(j.stdout) as FileAnswer;
    assert.equal(a.truncated, true);
    const cut = await runCli(['show', 'big.txt', '--org', 'acme', '--repo', 'files', '--url', s.url], { cwd: repo });
    assert.match(cut.stderr, new RegExp(`continue with big\\.txt:${a.end + 1}-201`));
    const missing = await runCli(['show', 'nope.ts', '--org', 'acme', '--repo', 'files', '--url', s.url], { cwd: repo });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no_such_file, HTTP 404/);
  });
});

describe('files route access: the rule of GET on a root', () => {
  let s: StoreServer;
  const reader: TestToken = { secret: 'lspd_rd-0123456789abcdefghijklmnopqrstu', name: 'reader', orgs: ['acme'], permissions: ['read'] };
  const querier: TestToken = { secret: 'lspd_qy-0123456789abcdefghijklmnopqrstu', name: 'querier', orgs: ['acme'], permissions: ['query', 'upload'] };
  const other: TestToken = { secret: 'lspd_ot-0123456789abcdefghijklmnopqrstu', name: 'other', orgs: ['globex'], permissions: ['read'] };
  const path = `/v1/roots/acme/auth/${SHA(1)}/files/src/a.ts`;

  before(async () => {
    const tokens = join(tempDir('lspd-files-tokens-'), 'tokens.json');
    writeTokens(tokens, [reader, querier, other]);
    s = await startStoreServer({ env: { LSPD_TOKENS: tokens } });
    const r = await fetch(`${s.url}/v1/roots/acme/auth/${SHA(1)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar', authorization: `Bearer ${querier.secret}` },
      body: await packTar([{ name: 'src/a.ts', data: TEN }]),
    });
    assert.equal(r.status, 201, await r.text());
  });
  after(() => s?.destroy());

  test('read on the org: 200; no token 401; no read permission or another org 403', async () => {
    const as = (t?: TestToken) => rawGet(s.url, path, t ? { authorization: `Bearer ${t.secret}` } : {});
    assert.equal((await as(reader)).status, 200);
    assert.equal((await as()).status, 401);
    assert.deepEqual([(await as(querier)).status, (await as(querier)).body.error], [403, 'forbidden']);
    assert.deepEqual([(await as(other)).status, (await as(other)).body.error], [403, 'forbidden']);
  });
});

describe('file reads are fair-shared per org (LSPD_MAX_FILE_READS)', () => {
  let s: StoreServer;
  // A file whose every read scans all of it (to count its lines): each read stays in
  // flight long enough for the other org's to arrive while the flood holds its share.
  const HUGE = ('z'.repeat(127) + '\n').repeat(256 * 1024); // 32 MiB
  const path = (org: string) => `/v1/roots/${org}/reads/${SHA(7)}/files/huge.txt?start=3&end=4`;

  before(async () => {
    s = await startStoreServer({ env: { LSPD_MAX_FILE_READS: '2' } });
    for (const org of ['acme', 'globex']) {
      const r = await fetch(`${s.url}/v1/roots/${org}/reads/${SHA(7)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/x-tar' },
        body: await packTar([{ name: 'huge.txt', data: HUGE }]),
      });
      assert.equal(r.status, 201, await r.text());
    }
  });
  after(() => s?.destroy());

  test("one org's flood is refused past its share (503 busy); another org's read is answered meanwhile", async () => {
    const read = async (org: string) => {
      const r = await fetch(s.url + path(org));
      return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as Record<string, unknown> };
    };
    const flood = Array.from({ length: 6 }, () => read('acme'));
    const other = await read('globex');
    const floods = await Promise.all(flood);
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.body.text, 'z'.repeat(127) + '\n');
    assert.equal(other.body.total_lines, 256 * 1024 + 1); // the empty line after the last \n, as LSP counts
    const ok = floods.filter((r) => r.status === 200);
    const busy = floods.filter((r) => r.status === 503);
    assert.equal(ok.length + busy.length, 6, JSON.stringify(floods.map((r) => r.status)));
    assert.ok(ok.length >= 1 && busy.length >= 1, `acme: ${ok.length} answered, ${busy.length} refused`);
    for (const r of busy) {
      assert.equal(r.body.error, 'busy');
      assert.equal(r.retryAfter, '1');
      // Past its share, or (had globex's read come first) with every slot taken.
      assert.match(String(r.body.message), /org acme already has 1 file reads running|2 file reads are running/);
    }
    // The shares are given back: the flooding org reads again once its reads are done.
    assert.equal((await read('acme')).status, 200);
    assert.match(await (await fetch(`${s.url}/metrics`)).text(), /lspd_org_refusals_total\{org="acme",reason="file_reads"\} [1-9]/);
  });
});

describe('reading a fetched npm dependency at the location a definition gave', { skip: cannotJail() }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  let mcp: Client | undefined;
  // Keyed by a real commit of the fixture's files, so the CLI can name the root from a checkout.
  const checkout = tempDir('lspd-files-npm-repo-');
  const fixture = join(import.meta.dirname, 'fixtures', 'npm-dep');
  const root = {
    org: 'acme',
    repo: 'files-npm',
    sha: gitRepo(checkout, Object.fromEntries(readdirSync(fixture).map((f) => [f, readFileSync(join(fixture, f), 'utf8')]))),
  };
  const files = `/v1/roots/${root.org}/${root.repo}/${root.sha}/files`;

  before(async () => {
    registry = await startNpmRegistry();
    d = await startLspd({ env: { LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority, LSPD_QUERY_TIMEOUT_MS: '60000' } });
    await uploadFixture(d.url, root, 'npm-dep');
    const view = await fetchSettled(d.url, root);
    assert.equal(view.state, 'done', JSON.stringify(view));
  });
  after(async () => {
    await mcp?.close();
    await d?.close();
    await registry?.close();
  });

  test('definition → external with read → the route and read_file answer the file, alike', { timeout: 180_000 }, async () => {
    const r = await lspQuery(d.url, { ...root, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', "require('left-pad-lite')", 9) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    type Loc = {
      external?: boolean;
      module?: string;
      version?: string;
      path: string;
      preview?: string;
      range: { start: { line: number } };
      read?: { from: string; path: string };
    };
    const locs = (r.body.locations as Loc[]).filter((l) => l.external === true && l.module === 'left-pad-lite');
    assert.ok(locs.length > 0, JSON.stringify(r.body));
    const loc = locs[0]!;
    assert.equal(loc.version, '1.0.0');
    assert.deepEqual(loc.read, { from: 'deps', path: `npm/top/node_modules/left-pad-lite/${loc.path}` }, JSON.stringify(loc));
    assert.doesNotMatch(JSON.stringify(r.body), /lspd-lsp-|\/deps\/|\/src\//, 'no host or jail path in the answer');

    // The whole file, as it lies in the root's fetched dependencies.
    const onDisk = readFileSync(join(d.store.depsDir(root), loc.read!.path), 'utf8');
    const whole = await getJson(d.url, `${files}/${loc.read!.path}?from=deps`);
    assert.equal(whole.status, 200, JSON.stringify(whole.body));
    assert.equal(whole.body.text, onDisk);
    assert.equal(whole.body.total_lines, onDisk.split(/\r\n|\r|\n/).length);
    assert.equal(whole.body.from, 'deps');
    // The location's own line, read by its range: the preview the definition showed.
    const at = loc.range.start.line;
    const line = await getJson(d.url, `${files}/${loc.read!.path}?from=deps&start=${at}&end=${at + 1}`);
    assert.equal((line.body.text as string).replace(/\r?\n$/, '').trim(), loc.preview?.trim());

    // The same through the read_file tool over /mcp.
    mcp = new Client({ name: 'lspd-test', version: '1' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(d.url + '/mcp')));
    const listed = (await mcp.listTools()).tools.find((t) => t.name === 'read_file');
    assert.ok(listed, 'read_file is listed');
    const res = await mcp.callTool({ name: 'read_file', arguments: { ...root, ...loc.read, start: at, end: at + 1 } });
    assert.equal(res.isError, undefined, JSON.stringify(res.content));
    assert.deepEqual(res.structuredContent, line.body);
    const tree = await mcp.callTool({ name: 'read_file', arguments: { ...root, path: 'index.js' } });
    assert.deepEqual(tree.structuredContent, (await getJson(d.url, `${files}/index.js`)).body);
    assert.equal((tree.structuredContent as FileAnswer).text, readFileSync(join(import.meta.dirname, 'fixtures', 'npm-dep', 'index.js'), 'utf8'));
    const err = await mcp.callTool({ name: 'read_file', arguments: { ...root, path: 'nope.js' } });
    assert.equal(err.isError, true);
    assert.deepEqual(err.structuredContent, { ...(await getJson(d.url, `${files}/nope.js`)).body, status: 404 });
  });

  test('lspd lsp prints where to read an external definition; that lspd show prints its lines', { timeout: 120_000 }, async () => {
    const at = position('npm-dep', 'index.js', "require('left-pad-lite')", 9);
    const cli = (...args: string[]) => runCli([...args, '--org', root.org, '--repo', root.repo, '--url', d.url], { cwd: checkout });
    const def = await cli('lsp', 'definition', `index.js:${at.line + 1}:${at.character + 1}`);
    assert.equal(def.code, 0, def.stderr);
    const m = /^ {2}read: lspd show --from deps (\S+):(\d+)-(\d+)$/m.exec(def.stdout);
    assert.ok(m, def.stdout);
    const [, path, first, last] = m as unknown as [string, string, string, string];
    assert.match(path, /^npm\/top\/node_modules\/left-pad-lite\//);
    const shown = await cli('show', '--from', 'deps', `${path}:${first}-${last}`);
    assert.equal(shown.code, 0, shown.stderr);
    const lines = readFileSync(join(d.store.depsDir(root), path), 'utf8').split('\n');
    const want = lines.slice(Number(first) - 1, Number(last)).join('\n');
    assert.equal(shown.stdout.replace(/\n$/, ''), want.replace(/\n$/, ''));
    assert.ok(shown.stdout.length > 0);
  });

  test('deps reads stay inside what SERVE binds: a link out of node_modules and the deps dir around it are refused', async () => {
    const deps = d.store.depsDir(root);
    const pkg = join(deps, 'npm/top/node_modules/left-pad-lite');
    const secret = join(mkdtempSync(join(tmpdir(), 'lspd-files-outside-')), 'secret.txt');
    writeFileSync(secret, 'outside the root\n');
    // What a fetched package could hold: a link anywhere.
    symlinkSync(secret, join(pkg, 'escape.js'));
    symlinkSync('../../package-lock.json', join(pkg, 'lock.json'));
    try {
      for (const rel of [
        'npm/top/node_modules/left-pad-lite/escape.js',
        'npm/top/node_modules/left-pad-lite/lock.json',
        'npm/top/package-lock.json',
        'npm/top/package.json',
      ]) {
        const r = await getJson(d.url, `${files}/${rel}?from=deps`);
        assert.deepEqual([r.status, r.body.error], [404, 'no_such_file'], `${rel}: ${JSON.stringify(r.body)}`);
      }
      // A tree path is never read from the deps, nor a deps path from the tree.
      const r = await getJson(d.url, `${files}/node_modules/left-pad-lite/index.js`);
      assert.deepEqual([r.status, r.body.error], [404, 'no_such_file']);
    } finally {
      rmSync(join(pkg, 'escape.js'));
      rmSync(join(pkg, 'lock.json'));
    }
  });
});
