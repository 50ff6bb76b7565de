// POST /v1/diff on a real git repository's commits, answered by the native TS 7
// server in the real SERVE jail: head gives `f` a required parameter, and the
// answer names f as changed, its two callers at base as impact (file + line), the
// new TS2554 "Expected 2 arguments, but got 1" errors at head, and nothing about
// the file nobody touched. Then: 409 need_tree naming the missing root, the second
// identical diff served from the cache (no LSP query asked), impact paged by
// cursor, `lspd diff`'s exit status as a CI gate, and the `diff` tool.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { archiveOf, commitAll, git } from './helpers/git-trees.js';
import { spawnDaemon, tempDir, type Daemon } from './helpers/daemon.js';
import { runCli, writeTokens, type TestToken } from './helpers/ops.js';
import { cannotJail, getJson, postJson, startLspd, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const org = 'acme';
const repo = 'diffrepo';

const BASE_FILES: Record<string, string> = {
  'package.json': '{"name": "diffrepo", "private": true, "type": "module"}\n',
  'tsconfig.json':
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [] },
      include: ['src'],
    }) + '\n',
  'src/f.ts': 'export function f(a: number): number {\n  return a * 2;\n}\n',
  'src/one.ts': "import { f } from './f.js';\n\nexport const one = f(1);\n",
  'src/two.ts': "import { f } from './f.js';\n\nexport function two(): number {\n  const x = 1;\n  return f(2) + x;\n}\n",
  'src/other.ts': "export const other = 'nobody touches this';\n",
};
const HEAD_F = 'export function f(a: number, b: number): number {\n  return a * b;\n}\n';

type Loc = { path: string; range: { start: { line: number } }; symbol: string; preview?: string };
type Diag = { path: string; code?: string | number; message: string; severity?: string };
type Sym = { qualified: string; path: string; change: string; signature_changed?: boolean; base?: { signature: string }; head?: { signature: string } };

describe('POST /v1/diff (TS 7 in the SERVE jail)', { skip }, () => {
  let d: Lspd;
  let dir: string;
  let base: string;
  let head: string;
  let addOnly: string;
  let removedFile: string;

  const put = async (sha: string) => {
    const r = await fetch(`${d.url}/v1/roots/${org}/${repo}/${sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: archiveOf(dir, sha),
    });
    assert.equal(r.status, 201, await r.text());
  };
  const diff = (body: Record<string, unknown>) => postJson(d.url, '/v1/diff', { org, repo, ...body });
  const orgQueries = async () => (await d.metrics.orgQueries.get()).values.reduce((n, v) => n + v.value, 0);
  const diffCount = async (result: string) => (await d.metrics.diffs.get()).values.find((v) => v.labels.result === result)?.value ?? 0;

  before(async () => {
    d = await startLspd();
    dir = tempDir('lspd-diff-repo-');
    git(dir, 'init', '-q', '-b', 'main');
    for (const [p, text] of Object.entries(BASE_FILES)) {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), text);
    }
    base = commitAll(dir, 'base');
    writeFileSync(join(dir, 'src/f.ts'), HEAD_F);
    head = commitAll(dir, 'f takes b');
    git(dir, 'checkout', '-q', '-b', 'add-only', base);
    writeFileSync(join(dir, 'src/extra.ts'), 'export const extra: number = 3;\n');
    addOnly = commitAll(dir, 'a new file only');
    git(dir, 'checkout', '-q', '-b', 'rm-f', base);
    git(dir, 'rm', '-q', 'src/f.ts');
    removedFile = commitAll(dir, 'f.ts removed');
    await put(base);
    await put(head);
    await put(removedFile);
  });
  after(async () => {
    await d?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('head adds a required parameter: f changed, its callers at base, the new TS2554 errors, nothing else', { timeout: 180_000 }, async () => {
    const r = await diff({ base, head });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const a = r.body;
    assert.equal(a.untrusted, true);
    assert.equal(a.incomplete, false, JSON.stringify(a.notes));
    assert.equal(a.cached, undefined);
    assert.deepEqual(a.files, [{ path: 'src/f.ts', change: 'modified' }]);
    assert.equal(a.files_total, 1);

    const symbols = a.symbols as Sym[];
    assert.deepEqual(
      symbols.map((s) => [s.qualified, s.path, s.change, s.signature_changed]),
      [['f', 'src/f.ts', 'changed', true]],
    );
    assert.match(symbols[0]!.base!.signature, /^export function f\(a: number\): number$/);
    assert.match(symbols[0]!.head!.signature, /^export function f\(a: number, b: number\): number$/);

    // The two calls, by file and zero-based line; not the declaration, not the imports.
    const impact = a.impact as Loc[];
    assert.deepEqual(impact.map((l) => `${l.symbol} ${l.path}:${l.range.start.line}`).sort(), ['f src/one.ts:2', 'f src/two.ts:4']);
    assert.equal(a.total, 2);
    assert.equal(a.truncated, false);
    assert.match(impact.find((l) => l.path === 'src/one.ts')!.preview ?? '', /f\(1\)/);

    // The errors the change brings, where the callers are; none in f.ts itself, none in other.ts.
    const diags = a.diagnostics as Diag[];
    assert.deepEqual(diags.map((x) => [x.path, String(x.code), x.severity]).sort(), [
      ['src/one.ts', '2554', 'error'],
      ['src/two.ts', '2554', 'error'],
    ]);
    for (const x of diags) assert.match(x.message, /Expected 2 arguments, but got 1/);
    assert.equal(a.new_errors, 2);
    assert.doesNotMatch(JSON.stringify(a), /other\.ts/, 'the untouched file appears nowhere');
  });

  test('a removed file: its symbols removed, their callers at base, the broken imports at head', { timeout: 180_000 }, async () => {
    const r = await diff({ base, head: removedFile });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const a = r.body;
    assert.equal(a.incomplete, false, JSON.stringify(a.notes));
    assert.deepEqual(a.files, [{ path: 'src/f.ts', change: 'removed' }]);
    assert.deepEqual(
      (a.symbols as Sym[]).map((s) => [s.qualified, s.change]),
      [['f', 'removed']],
    );
    assert.deepEqual((a.impact as Loc[]).map((l) => `${l.path}:${l.range.start.line}`).sort(), ['src/one.ts:2', 'src/two.ts:4']);
    const diags = a.diagnostics as Diag[];
    assert.deepEqual([...new Set(diags.map((x) => x.path))].sort(), ['src/one.ts', 'src/two.ts']);
    assert.ok(
      diags.every((x) => String(x.code) === '2307'),
      JSON.stringify(diags),
    );
    assert.equal(a.new_errors, 2);
  });

  test('the same diff again comes from the cache: no LSP query is asked', { timeout: 60_000 }, async () => {
    const queries = await orgQueries();
    const cachedBefore = await diffCount('cached');
    const r = await diff({ base, head });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.cached, true);
    assert.equal(await orgQueries(), queries, 'a cached diff asks the query service nothing');
    assert.equal(await diffCount('cached'), cachedBefore + 1);
    assert.equal(r.body.new_errors, 2);
    // Paging impact by cursor: two pages of one, together the whole list.
    const p1 = await diff({ base, head, limit: 1 });
    assert.equal((p1.body.impact as Loc[]).length, 1);
    assert.equal(p1.body.truncated, true);
    assert.equal(typeof p1.body.next_cursor, 'string');
    const p2 = await diff({ base, head, limit: 1, cursor: p1.body.next_cursor });
    assert.equal(p2.status, 200, JSON.stringify(p2.body));
    assert.equal(p2.body.next_cursor, undefined);
    assert.deepEqual(
      [...(p1.body.impact as Loc[]), ...(p2.body.impact as Loc[])].map((l) => `${l.path}:${l.range.start.line}`).sort(),
      (r.body.impact as Loc[]).map((l) => `${l.path}:${l.range.start.line}`).sort(),
    );
    // A cursor of one diff is refused by another.
    const foreign = await diff({ base: head, head: base, cursor: p1.body.next_cursor });
    assert.equal(foreign.status, 400, JSON.stringify(foreign.body));
    assert.equal((await orgQueries()) >= queries, true);
  });

  test('a head that is not stored: 409 need_tree naming it', async () => {
    const r = await diff({ base, head: addOnly });
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'need_tree');
    assert.equal(r.body.missing, 'head');
    assert.deepEqual(r.body.root, { org, repo, sha: addOnly });
    const bad = await diff({ base: 'main', head });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_sha');
  });

  test('lspd diff: exit 1 when head brings errors, 0 for a change adding only a new file (uploaded with --upload)', { timeout: 180_000 }, async () => {
    const cli = (...args: string[]) => runCli(['diff', ...args, '--org', org, '--repo', repo, '--url', d.url], { cwd: dir, timeoutMs: 150_000 });
    const bad = await cli(base, head);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stdout, /changed +Function f +src\/f\.ts:1:1/i);
    assert.match(bad.stdout, /src\/one\.ts:3:\d+ +f/);
    assert.match(bad.stdout, /src\/two\.ts:5:\d+ +f/);
    assert.match(bad.stdout, /src\/one\.ts:3:\d+ +error: Expected 2 arguments, but got 1\./);
    assert.match(bad.stdout, /^FAIL: 2 new errors at head$/m);

    const good = await cli(base, 'add-only', '--upload');
    assert.equal(good.code, 0, good.stderr + good.stdout);
    assert.match(good.stdout, /1 files changed \(1 added, 0 modified, 0 removed\)/);
    assert.match(good.stdout, /added +src\/extra\.ts/);
    assert.match(good.stdout, /^ok: no new errors at head$/m);
    const json = await cli(base, 'add-only', '--json');
    assert.equal(json.code, 0, json.stderr);
    const a = JSON.parse(json.stdout) as Record<string, unknown>;
    assert.deepEqual(a.files, [{ path: 'src/extra.ts', change: 'added' }]);
    assert.deepEqual([a.symbols, a.impact, a.diagnostics, a.new_errors], [[], [], [], 0]);
  });

  test('the diff tool is listed and answers like the route', { timeout: 60_000 }, async () => {
    const tools = (await getJson(d.url, '/v1/tools')).body.tools as { name: string; inputSchema: { required?: string[] } }[];
    const tool = tools.find((t) => t.name === 'diff');
    assert.ok(tool, 'diff is listed');
    assert.deepEqual([...(tool.inputSchema.required ?? [])].sort(), ['base', 'head', 'org', 'repo']);
    const r = await fetch(`${d.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'diff', arguments: { org, repo, base, head } } }),
    });
    const body = (await r.json()) as { result: { isError?: boolean; structuredContent: Record<string, unknown> } };
    assert.equal(body.result.isError, undefined, JSON.stringify(body));
    const viaTool = body.result.structuredContent;
    const viaRoute = (await diff({ base, head })).body;
    const { elapsed_ms: _a, ...t } = viaTool;
    const { elapsed_ms: _b, ...h } = viaRoute;
    assert.deepEqual(t, h);
    assert.deepEqual((viaTool.impact as Loc[]).map((l) => l.path).sort(), ['src/one.ts', 'src/two.ts']);
  });
});

describe('POST /v1/diff auth', () => {
  const acme: TestToken = { secret: 'lspd_diff-acme-0123456789abcdefghijklmn', name: 'acme', orgs: ['acme'], permissions: ['read', 'query'] };
  const upOnly: TestToken = { secret: 'lspd_diff-up-0123456789abcdefghijklmnop', name: 'up', orgs: ['acme'], permissions: ['upload'] };
  let d: Daemon;
  const tokensDir = tempDir('lspd-diff-tokens-');
  before(async () => {
    const tokens = join(tokensDir, 'tokens.json');
    writeTokens(tokens, [acme, upOnly]);
    // A uid range of this file's own (pid-based, apart from every other harness's).
    d = await spawnDaemon({
      env: { LSPD_TOKENS: tokens, LSPD_JAIL_UID_BASE: String(3_100_000 + (process.pid % 1000) * 64), LSPD_JAIL_UID_COUNT: '64' },
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
    rmSync(tokensDir, { recursive: true, force: true });
  });

  test("the body's org is checked: another org's, or a token without query, is 403; the right one reaches the route", async () => {
    const body = (o: string) => ({ org: o, repo, base: '1'.repeat(40), head: '2'.repeat(40) });
    const post = (token: string, b: unknown) => postJson(d.url, '/v1/diff', b, { authorization: `Bearer ${token}` });
    assert.equal((await post(acme.secret, body('globex'))).status, 403);
    assert.equal((await post(upOnly.secret, body('acme'))).status, 403);
    assert.equal((await postJson(d.url, '/v1/diff', body('acme'))).status, 401);
    const ok = await post(acme.secret, body('acme'));
    assert.equal(ok.status, 409, JSON.stringify(ok.body));
    assert.equal(ok.body.missing, 'base');
  });
});
