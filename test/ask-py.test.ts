// POST /ask on a Python tree, end to end: a real lspd (real jail, real pyright),
// the ask-py fixture uploaded through PUT as a tar stream. Plain, qualified (class
// member, module member pkg.mod.func), ambiguous, unknown, and a name defined
// outside the tree (the standard library: resolved, but never rendered as a path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askOn, askSuite } from './helpers/ask-suite.js';
import { lineOf, shaOf } from './helpers/lsp-harness.js';

const FIX = 'ask-py';
const root = { org: 'acme', repo: 'ask-py', sha: shaOf('ask-py') };

type Loc = { path: string; range: { start: { line: number } }; external?: boolean };
type Answer = Record<string, unknown> & { locations?: Loc[]; candidates?: (Loc & { qualified: string })[]; matches?: number };

const ask = askOn<Answer>(askSuite({ uploads: [[root, FIX]] }), root);

const at = (a: Answer | undefined) => a?.locations?.map((l) => `${l.path}:${l.range.start.line}`);

test('plain name: Server is the class in pkg/server.py', async (t) => {
  const a = await ask(t, { symbol: 'Server' });
  if (!a) return;
  assert.equal(a.matches, 1);
  assert.deepEqual(at(a), [`pkg/server.py:${lineOf(FIX, 'pkg/server.py', 'class Server')}`]);
});

test('class member: Server.close is the method; plain close is ambiguous with mod.close', async (t) => {
  const m = await ask(t, { symbol: 'Server.close' });
  if (!m) return;
  assert.equal(m.matches, 1);
  assert.deepEqual(at(m), [`pkg/server.py:${lineOf(FIX, 'pkg/server.py', 'def close')}`]);
  const amb = await ask(t, { symbol: 'close' });
  assert.equal(amb?.matches, 2);
  assert.deepEqual(amb?.candidates?.map((c) => c.qualified).sort(), ['Server.close', 'pkg.mod.close']);
});

test('module member: pkg.mod.func and mod.func are the one in pkg/mod.py; other.func the other', async (t) => {
  for (const symbol of ['pkg.mod.func', 'mod.func']) {
    const a = await ask(t, { symbol });
    if (!a) return;
    assert.equal(a.matches, 1, symbol);
    assert.deepEqual(at(a), [`pkg/mod.py:${lineOf(FIX, 'pkg/mod.py', 'def func')}`], symbol);
  }
  const o = await ask(t, { symbol: 'other.func' });
  assert.deepEqual(at(o), [`pkg/other.py:${lineOf(FIX, 'pkg/other.py', 'def func')}`]);
  const c = await ask(t, { symbol: 'mod.LIMIT' });
  assert.deepEqual(at(c), [`pkg/mod.py:${lineOf(FIX, 'pkg/mod.py', 'LIMIT = 10')}`]);
});

test('ambiguous: func matches two functions, listed, not guessed; hover refuses to pick', async (t) => {
  const a = await ask(t, { symbol: 'func' });
  if (!a) return;
  assert.equal(a.matches, 2);
  assert.deepEqual(a.candidates?.map((c) => c.path).sort(), ['pkg/mod.py', 'pkg/other.py']);
  const h = await ask(t, { symbol: 'func', op: 'hover' });
  assert.equal(h?.ambiguous, true);
  assert.equal(h?.contents, undefined);
});

test('hover and references by qualified name', async (t) => {
  const h = await ask(t, { symbol: 'pkg.mod.func', op: 'hover' });
  if (!h) return;
  assert.match(String(h.contents), /Doubles x/);
  const r = await ask(t, { symbol: 'Server.close', op: 'references' });
  assert.ok(at(r)!.includes(`pkg/app.py:${lineOf(FIX, 'pkg/app.py', 'server.close()')}`), JSON.stringify(r));
});

test('path scopes resolution to the uses in that file', async (t) => {
  const a = await ask(t, { symbol: 'func', path: 'pkg/app.py' });
  if (!a) return;
  // app.py calls mod.func (imported by name) and other.func (through the module): both are uses there.
  assert.equal(a.matches, 2);
  const q = await ask(t, { symbol: 'other.func', path: 'pkg/app.py' });
  assert.deepEqual(at(q), [`pkg/other.py:${lineOf(FIX, 'pkg/other.py', 'def func')}`]);
});

test('a name defined outside the tree: json.dumps resolves, and no host path is rendered', async (t) => {
  const a = await ask(t, { symbol: 'json.dumps' });
  if (!a) return;
  assert.equal(a.matches, 1);
  // The standard library is neither the tree nor a fetched dependency: counted in `other`.
  assert.deepEqual(a.locations, []);
  assert.ok(Number(a.other) >= 1, JSON.stringify(a));
  assert.doesNotMatch(JSON.stringify(a), /\/usr\/|typeshed|site-packages|\/root\//);
});

test('unknown name: 404 symbol_not_found naming it', async (t) => {
  const a = await ask(t, { symbol: 'pkg.mod.nothing_here' }, 404);
  if (!a) return;
  assert.equal(a.error, 'symbol_not_found');
  assert.match(String(a.message), /pkg\.mod\.nothing_here/);
});
