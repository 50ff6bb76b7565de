// Every /v1/code/lsp op on the TypeScript fixture, answered by the native
// TypeScript 7 server in the real SERVE jail, the tree uploaded through the real
// PUT route. Positions are found by text; answers are checked by file and line.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, shaOf } from './helpers/lsp-harness.js';
import { acmeRoot, assertAnswerFrame, assertClean, completeDiagnostics, langSuite, locs, symbolIn, symbols } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'ts-basic';
const root = acmeRoot(FX, 'ts-basic-native');

describe('TypeScript (native TS 7) in the SERVE jail', { skip }, () => {
  const s = langSuite({
    server: 'typescript',
    uploads: [[root, FX]],
    checks: (a, body) => {
      assertAnswerFrame(a);
      assert.equal(a.op, body.op);
    },
  });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test('definition crosses files', async () => {
    const a = await ask({ op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") });
    assert.equal(a.incomplete, false);
    assert.deepEqual(
      locs(a).map((l) => [l.path, l.range.start.line]),
      [['src/greet.ts', lineOf(FX, 'src/greet.ts', 'export function greet')]],
    );
    assert.match(locs(a)[0]!.preview!, /export function greet\(name: string\)/);
  });

  test('typeDefinition lands on the interface', async () => {
    const a = await ask({ op: 'typeDefinition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "alice.greet('Bob')") });
    assert.deepEqual(
      locs(a).map((l) => [l.path, l.range.start.line]),
      [['src/greet.ts', lineOf(FX, 'src/greet.ts', 'export interface Greeter')]],
    );
  });

  test('implementation of an interface finds the class', async () => {
    const a = await ask({ op: 'implementation', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'Greeter {') });
    assert.ok(
      locs(a).some((l) => l.path === 'src/greet.ts' && l.range.start.line === lineOf(FX, 'src/greet.ts', 'export class Person')),
      JSON.stringify(a.locations),
    );
  });

  test('references, with and without the declaration, with counts', async () => {
    const at = position(FX, 'src/greet.ts', 'function greet', 'function '.length);
    const all = await ask({ op: 'references', path: 'src/greet.ts', ...at });
    // the declaration, the import, and two calls in app.ts
    assert.equal(all.total, 4, JSON.stringify(all.locations));
    assert.equal(all.truncated, false);
    assert.deepEqual(
      locs(all)
        .map((l) => `${l.path}:${l.range.start.line}`)
        .sort(),
      [
        `src/app.ts:${lineOf(FX, 'src/app.ts', 'import {')}`,
        `src/app.ts:${lineOf(FX, 'src/app.ts', "greet('world')")}`,
        `src/app.ts:${lineOf(FX, 'src/app.ts', "greet('again')")}`,
        `src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`,
      ].sort(),
    );
    // Without declarations TS leaves out the import specifier too (it declares the alias): the two calls.
    const uses = await ask({ op: 'references', path: 'src/greet.ts', ...at, includeDeclaration: false });
    assert.deepEqual(
      locs(uses)
        .map((l) => `${l.path}:${l.range.start.line}`)
        .sort(),
      [`src/app.ts:${lineOf(FX, 'src/app.ts', "greet('world')")}`, `src/app.ts:${lineOf(FX, 'src/app.ts', "greet('again')")}`].sort(),
    );
    const page = await ask({ op: 'references', path: 'src/greet.ts', ...at, limit: 2 });
    assert.equal(locs(page).length, 2);
    assert.equal(page.total, 4);
    assert.equal(page.truncated, true);
  });

  test('hover shows the signature', async () => {
    const a = await ask({ op: 'hover', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") });
    assert.match(String(a.contents), /function greet\(name: string\): string/);
    assert.ok(!String(a.contents).includes(s.daemon().config.dataDir), 'no host path');
  });

  test('documentSymbols, whole and filtered, with containers', async () => {
    const a = await ask({ op: 'documentSymbols', path: 'src/greet.ts' });
    const syms = symbols(a);
    const by = (n: string, c?: string) => syms.find((s) => s.name === n && s.container === c);
    assert.equal(by('Greeter')?.kind, 'interface');
    assert.equal(by('greet')?.kind, 'function');
    assert.equal(by('greet')?.range.start.line, lineOf(FX, 'src/greet.ts', 'export function greet'));
    assert.equal(by('Person')?.kind, 'class');
    assert.equal(by('greet', 'Person')?.kind, 'method');
    assert.ok(syms.every((s) => s.path === 'src/greet.ts'));
    const f = await ask({ op: 'documentSymbols', path: 'src/greet.ts', query: 'pers' });
    assert.deepEqual(
      symbols(f).map((s) => s.name),
      ['Person'],
    );
  });

  test('workspaceSymbols finds a class by name', async () => {
    const a = await ask({ op: 'workspaceSymbols', query: 'Person' });
    const p = symbolIn(a, (s) => s.name === 'Person');
    assert.equal(p.path, 'src/greet.ts');
    assert.equal(p.range.start.line, lineOf(FX, 'src/greet.ts', 'export class Person'));
  });

  test('diagnostics: the type error is found; a clean file is clean and complete', async () => {
    const bad = await ask({ op: 'diagnostics', path: 'src/broken.ts' });
    const diags = completeDiagnostics(bad);
    assert.equal(diags.length, 1, JSON.stringify(diags));
    assert.equal(diags[0]!.severity, 'error');
    assert.equal(diags[0]!.range.start.line, lineOf(FX, 'src/broken.ts', 'export const count'));
    assert.match(diags[0]!.message, /not assignable to type 'number'/);
    const clean = await ask({ op: 'diagnostics', path: 'src/app.ts' });
    assertClean(clean);
  });

  test('.mjs and .cjs are opened as JavaScript', async () => {
    const m = await ask({ op: 'definition', path: 'src/tools.mjs', ...position(FX, 'src/tools.mjs', 'double(2)') });
    assert.deepEqual(
      locs(m).map((l) => [l.path, l.range.start.line]),
      [['src/tools.mjs', lineOf(FX, 'src/tools.mjs', 'export function double')]],
    );
    const c = await ask({ op: 'definition', path: 'src/legacy.cjs', ...position(FX, 'src/legacy.cjs', "shout('quiet')") });
    assert.deepEqual(
      locs(c).map((l) => [l.path, l.range.start.line]),
      [['src/legacy.cjs', lineOf(FX, 'src/legacy.cjs', 'function shout')]],
    );
    // As TypeScript under `strict`, `double(n)` would be an implicit-any error; as JavaScript it is clean.
    for (const path of ['src/tools.mjs', 'src/legacy.cjs']) {
      const dg = await ask({ op: 'diagnostics', path });
      assertClean(dg, `${path}: ${JSON.stringify(dg.diagnostics)}`);
    }
    const h = await ask({ op: 'hover', path: 'src/tools.mjs', ...position(FX, 'src/tools.mjs', 'double(2)') });
    assert.match(String(h.contents), /function double\(n: any\): number/);
  });

  test('positions in utf-16, utf-8 and code points, both ways', async () => {
    const text = readFileSync(join(fixturesDir, FX, 'src/emoji.ts'), 'utf8').split('\n');
    const useLine = text.findIndex((l) => l.includes("'👋' + smile"));
    const declLine = text.findIndex((l) => l.includes('smile = face'));
    const units = (s: string, enc: string) => (enc === 'utf-16' ? s.length : enc === 'utf-8' ? Buffer.byteLength(s) : [...s].length);
    for (const encoding of ['utf-16', 'utf-8', 'codepoint']) {
      const use = text[useLine]!;
      const character = units(use.slice(0, use.indexOf('smile')), encoding);
      const a = await ask({ op: 'definition', path: 'src/emoji.ts', line: useLine, character, encoding });
      const decl = text[declLine]!;
      const want = units(decl.slice(0, decl.indexOf('smile')), encoding);
      assert.deepEqual(
        locs(a).map((l) => [l.range.start.line, l.range.start.character]),
        [[declLine, want]],
        encoding,
      );
    }
  });

  test('a repeated query is a cache hit', async () => {
    const q = { op: 'hover', path: 'src/greet.ts', ...position(FX, 'src/greet.ts', 'class Person') };
    const first = await ask(q);
    const before = await s.daemon().metrics.cache.get();
    const again = await ask(q);
    const after = await s.daemon().metrics.cache.get();
    const hits = (m: typeof before) => m.values.find((v) => v.labels.result === 'hit')?.value ?? 0;
    assert.equal(hits(after), hits(before) + 1);
    assert.equal(again.contents, first.contents);
  });

  test('file checks come before any server: 404, 400, 422', async () => {
    const missing = await lspQuery(s.daemon().url, { ...root, op: 'hover', path: 'src/nope.ts', line: 0, character: 0 });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'no_such_file');
    const past = await lspQuery(s.daemon().url, { ...root, op: 'hover', path: 'src/app.ts', line: 9999, character: 0 });
    assert.equal(past.status, 400);
    const noServer = await lspQuery(s.daemon().url, { ...root, op: 'hover', path: 'package.json', line: 0, character: 0 });
    assert.equal(noServer.status, 422);
    assert.equal(noServer.body.error, 'no_server');
    const unknownRoot = await lspQuery(s.daemon().url, { ...root, sha: shaOf('never-uploaded'), op: 'hover', path: 'src/app.ts', line: 0, character: 0 });
    assert.equal(unknownRoot.status, 409);
    assert.equal(unknownRoot.body.need, 'tree');
  });

  test("GET /v1/roots/... lists the root's sessions", async () => {
    const r = await getJson(s.daemon().url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`);
    assert.equal(r.status, 200);
    const sessions = r.body.sessions as { documents: number }[];
    assert.deepEqual(
      sessions.map(({ documents, ...rest }) => rest),
      [{ server: 'typescript', state: 'ready', workspace: '' }],
    );
    assert.ok(sessions[0]!.documents >= 2, `the files the queries above opened: ${sessions[0]!.documents}`);
  });
});
