// /ask asks only the servers that can know a name (issue 26, item 5): on a polyglot
// tree, a bounded scan of the tree for files that mention the name's leaf decides
// which languages' servers are asked. A name only Python files mention starts
// pyright alone; a TypeScript name starts the TS server and not pyright again or
// bash; a name that no file mentions still asks every server (its near names).
// Real daemon, real jail, real servers; warm-up is off, so every spawn is a query's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cannotJail, fixturesDir, lineOf, postJson, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const root = { org: 'acme', repo: 'polyglot', sha: shaOf('ask-languages') };

describe('/ask on a polyglot tree wakes only the servers whose files mention the name', { skip }, () => {
  let d: Lspd;
  let dir: string;
  /** Spawns so far, by server name. */
  const spawns = async () => {
    const m = await d.metrics.registry.getSingleMetric('lspd_session_spawns_total')!.get();
    return Object.fromEntries(m.values.filter((v) => v.value > 0).map((v) => [String(v.labels.server), v.value]));
  };

  before(async () => {
    d = await startLspd();
    dir = mkdtempSync(join(tmpdir(), 'lspd-polyglot-'));
    cpSync(join(fixturesDir, 'ask-py'), dir, { recursive: true });
    cpSync(join(fixturesDir, 'ts-basic'), join(dir, 'web'), { recursive: true });
    cpSync(join(fixturesDir, 'sh-basic'), join(dir, 'scripts'), { recursive: true });
    await uploadDir(d.url, root, dir, '?warm=false');
  });
  after(async () => {
    await d?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a name only .py files mention starts pyright alone', async () => {
    assert.deepEqual(await spawns(), {}, 'nothing runs before the first question');
    const r = await postJson(d.url, '/ask', { ...root, symbol: 'Server.close' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const locs = r.body.locations as { path: string; range: { start: { line: number } } }[];
    assert.deepEqual(
      locs.map((l) => `${l.path}:${l.range.start.line}`),
      [`pkg/server.py:${lineOf('ask-py', 'pkg/server.py', 'def close')}`],
    );
    assert.deepEqual(Object.keys(await spawns()), ['pyright']);
  });

  test('a name only .ts files mention starts the TypeScript server, not bash', async () => {
    const r = await postJson(d.url, '/ask', { ...root, symbol: 'Person' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const locs = r.body.locations as { path: string; range: { start: { line: number } } }[];
    assert.deepEqual(
      locs.map((l) => `${l.path}:${l.range.start.line}`),
      [`web/src/greet.ts:${lineOf('ts-basic', 'src/greet.ts', 'export class Person')}`],
    );
    const started = await spawns();
    assert.equal(started.pyright, 1, 'pyright was not started again');
    assert.equal(Object.keys(started).length, 2, JSON.stringify(started));
    assert.ok(!Object.keys(started).some((s) => /bash/.test(s)), JSON.stringify(started));
  });

  test('the position route takes the same filter; a language the root lacks is 422 no_server', async () => {
    const r = await postJson(d.url, '/v1/code/lsp', { ...root, op: 'workspaceSymbols', query: 'Server', languages: ['python'] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'pyright');
    const none = await postJson(d.url, '/v1/code/lsp', { ...root, op: 'workspaceSymbols', query: 'x', languages: ['rust'] });
    assert.equal(none.status, 422, JSON.stringify(none.body));
    assert.equal(none.body.error, 'no_server');
    const bad = await postJson(d.url, '/v1/code/lsp', { ...root, op: 'hover', path: 'pkg/mod.py', line: 0, character: 0, languages: ['python'] });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
  });
});
