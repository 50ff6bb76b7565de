// POST /ask on a TypeScript tree, end to end: a real lspd (real jail, real
// TypeScript server), the ask-ts fixture uploaded through PUT as a tar stream.
// Plain, qualified (class member, namespace and module member), overloaded,
// ambiguous, unknown, and a name from the fixture's node_modules dependency.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askOn, askSuite } from './helpers/ask-suite.js';
import { lineOf, postJson, shaOf } from './helpers/lsp-harness.js';

const FIX = 'ask-ts';
const root = { org: 'acme', repo: 'ask-ts', sha: shaOf('ask-ts') };
const daemon = askSuite({ uploads: [[root, FIX]] });

type Loc = { path: string; range: { start: { line: number; character: number } }; external?: boolean; module?: string; version?: string; preview?: string };
type Answer = Record<string, unknown> & { locations?: Loc[]; candidates?: (Loc & { qualified: string; name: string })[]; matches?: number };

const ask = askOn<Answer>(daemon, root);

test('plain name: Server is the class in src/server.ts', async (t) => {
  const a = await ask(t, { symbol: 'Server' });
  if (!a) return;
  assert.equal(a.matches, 1);
  assert.equal(a.untrusted, true);
  assert.equal(a.locations?.[0]?.path, 'src/server.ts');
  assert.equal(a.locations?.[0]?.range.start.line, lineOf(FIX, 'src/server.ts', 'export class Server'));
  assert.match(a.locations?.[0]?.preview ?? '', /class Server/);
});

test('qualified class member: Server.close is the method, not the free function close', async (t) => {
  const a = await ask(t, { symbol: 'Server.close' });
  if (!a) return;
  assert.equal(a.matches, 1);
  assert.equal(a.locations?.length, 1);
  assert.equal(a.locations![0]!.path, 'src/server.ts');
  assert.equal(a.locations![0]!.range.start.line, lineOf(FIX, 'src/server.ts', 'close(): void'));
});

test('ambiguous plain name: close lists both candidates with names that pick one', async (t) => {
  const a = await ask(t, { symbol: 'close' });
  if (!a) return;
  assert.equal(a.matches, 2);
  assert.deepEqual(a.locations?.map((l) => l.path).sort(), ['src/server.ts', 'src/util/close.ts']);
  const qualified = a.candidates?.map((c) => c.qualified).sort();
  assert.deepEqual(qualified, ['Server.close', 'src.util.close.close']);
  // Each candidate's qualified name resolves to it alone.
  for (const q of qualified ?? []) {
    const one = await ask(t, { symbol: q });
    assert.equal(one?.matches, 1, q);
  }
});

test('two functions named parse in different files: ambiguous; a.parse picks one', async (t) => {
  const a = await ask(t, { symbol: 'parse' });
  if (!a) return;
  assert.equal(a.matches, 2);
  assert.deepEqual(a.candidates?.map((c) => c.path).sort(), ['src/a/parse.ts', 'src/b/parse.ts']);
  const one = await ask(t, { symbol: 'a.parse' });
  assert.equal(one?.matches, 1);
  assert.equal(one?.locations?.[0]?.path, 'src/a/parse.ts');
});

test('overloads are one symbol: format matches 1', async (t) => {
  const a = await ask(t, { symbol: 'format' });
  if (!a) return;
  assert.equal(a.matches, 1);
  assert.ok(a.locations!.every((l) => l.path === 'src/format.ts'));
});

test('module members: Paths.join (namespace) and paths.separator (module path)', async (t) => {
  const j = await ask(t, { symbol: 'Paths.join' });
  if (!j) return;
  assert.equal(j.matches, 1);
  assert.equal(j.locations?.[0]?.path, 'src/paths.ts');
  assert.equal(j.locations?.[0]?.range.start.line, lineOf(FIX, 'src/paths.ts', 'export function join'));
  const sep = await ask(t, { symbol: 'paths.separator' });
  assert.equal(sep?.matches, 1);
  assert.equal(sep?.locations?.[0]?.range.start.line, lineOf(FIX, 'src/paths.ts', 'export const separator'));
});

test('a name from a dependency lands external with module and version', async (t) => {
  const a = await ask(t, { symbol: 'greet' });
  if (!a) return;
  assert.equal(a.matches, 1);
  const l = a.locations?.[0];
  assert.equal(l?.external, true, JSON.stringify(a));
  assert.equal(l?.module, 'greeter');
  assert.equal(l?.version, '1.2.3');
  assert.equal(l?.path, 'index.d.ts');
  // Qualified by its package, and scoped to the file that uses it: the same place.
  const q = await ask(t, { symbol: 'greeter.greet', path: 'src/main.ts' });
  assert.equal(q?.locations?.[0]?.module, 'greeter');
  const h = await ask(t, { symbol: 'greet', op: 'hover' });
  assert.match(String(h?.contents), /Greets someone by name/);
});

test('unknown name: 404 symbol_not_found with a clear message, not an empty success', async (t) => {
  const a = await ask(t, { symbol: 'noSuchThingAnywhere' }, 404);
  if (!a) return;
  assert.equal(a.error, 'symbol_not_found');
  assert.match(String(a.message), /noSuchThingAnywhere/);
  const near = await ask(t, { symbol: 'clos' }, 404);
  assert.ok(
    (near?.suggestions as string[]).some((x) => x.endsWith('close')),
    JSON.stringify(near),
  );
  const wrongClass = await ask(t, { symbol: 'Client.close' }, 404);
  assert.equal(wrongClass?.error, 'symbol_not_found');
});

test('references: of Server.close (the method call in main.ts); of close: candidates, no guess', async (t) => {
  const a = await ask(t, { symbol: 'Server.close', op: 'references' });
  if (!a) return;
  const lines = a.locations!.map((l) => `${l.path}:${l.range.start.line}`);
  assert.ok(lines.includes(`src/main.ts:${lineOf(FIX, 'src/main.ts', 'server.close()')}`), lines.join(' '));
  assert.ok(lines.includes(`src/server.ts:${lineOf(FIX, 'src/server.ts', 'close(): void')}`), lines.join(' '));
  assert.ok(!lines.includes(`src/main.ts:${lineOf(FIX, 'src/main.ts', 'close(3)')}`), 'the free function is not a reference of the method');
  const amb = await ask(t, { symbol: 'close', op: 'references' });
  assert.equal(amb?.ambiguous, true);
  assert.equal(amb?.matches, 2);
  assert.equal(amb?.locations, undefined);
  assert.equal(amb?.candidates?.length, 2);
});

test('references grouped by file, with counts', async (t) => {
  const a = await ask(t, { symbol: 'Server.close', op: 'references', grouped: true });
  if (!a) return;
  const groups = a.groups as { path: string; count: number; locations: Loc[] }[];
  assert.deepEqual(
    groups.map((g) => [g.path, g.count, g.locations.length]),
    [
      ['src/main.ts', 1, 1],
      ['src/server.ts', 1, 1],
    ],
  );
  assert.equal(a.total, 2);
  assert.equal(a.locations, undefined);
});

test('hover by name: the method documentation', async (t) => {
  const a = await ask(t, { symbol: 'Server.close', op: 'hover' });
  if (!a) return;
  assert.match(String(a.contents), /Stops accepting connections/);
});

test('path scopes the search to where the name is used', async (t) => {
  const a = await ask(t, { symbol: 'Server.close', path: 'src/main.ts' });
  if (!a) return;
  assert.equal(a.matches, 1);
  assert.equal(a.locations?.[0]?.path, 'src/server.ts');
  const none = await ask(t, { symbol: 'parse', path: 'src/server.ts' }, 404);
  assert.equal(none?.error, 'symbol_not_found');
});

test('context and paging pass through: limit 1 pages the two locations of close', async (t) => {
  const first = await ask(t, { symbol: 'close', limit: 1, context: 1 });
  if (!first) return;
  assert.equal(first.locations?.length, 1);
  assert.equal(first.total, 2);
  assert.equal(first.truncated, true);
  assert.equal(typeof first.next_cursor, 'string');
  const second = await ask(t, { symbol: 'close', limit: 1, cursor: first.next_cursor });
  assert.equal(second?.locations?.length, 1);
  assert.notEqual(second?.locations?.[0]?.path, first.locations?.[0]?.path);
  assert.equal(second?.truncated, false);
});

test('encoding: positions come back in the unit asked for', async (t) => {
  const line = "/* é𝒳 */ export function wide(): string { return 'wide'; }";
  const col16 = line.indexOf('wide');
  const expect = { 'utf-16': col16, 'utf-8': Buffer.byteLength(line.slice(0, col16)), codepoint: [...line.slice(0, col16)].length };
  for (const [encoding, character] of Object.entries(expect)) {
    const a = await ask(t, { symbol: 'wide', encoding });
    if (!a) return;
    assert.equal(a.locations?.[0]?.range.start.character, character, encoding);
    const h = await ask(t, { symbol: 'wide', encoding, op: 'hover' });
    assert.match(String(h?.contents), /function wide\(\): string/, encoding);
  }
});

test('errors: bad symbol 400, unknown root 409 need_tree', async (t) => {
  const bad = await ask(t, { symbol: 'a..b' }, 400);
  if (!bad) return;
  assert.equal(bad.error, 'bad_request');
  const r = await postJson(daemon.url(), '/ask', { ...root, sha: shaOf('never-uploaded'), symbol: 'x' });
  assert.equal(r.status, 409);
  assert.equal(r.body.error, 'need_tree');
});
