// The second TS/JS row, chosen by LSPD_TYPESCRIPT_SERVER=tsserver:
// typescript-language-server over the daemon's pinned TypeScript 5.9, in the real
// SERVE jail. Its syntax server answers a definition with the local import line
// before the project has loaded; the readiness strategy (the document's first
// semantic diagnostics) must make the first answer the right one. Diagnostics are
// pushed, not pulled.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cannotJail, lineOf, lspQuery, position } from './helpers/lsp-harness.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'ts-basic';
const root = acmeRoot(FX, 'ts-basic-tsserver');

describe('TypeScript (typescript-language-server + TS 5.9) in the SERVE jail', { skip }, () => {
  const s = langSuite({
    uploads: [[root, FX]],
    // tsserver loads a project in seconds of CPU; on a loaded CI box that can pass the
    // 20 s default readiness bound. This test is about right answers, not speed.
    start: () => ({ env: { LSPD_TYPESCRIPT_SERVER: 'tsserver', LSPD_READY_TIMEOUT_MS: '60000' } }),
  });

  test('the first (cold) definition is the real one, not the import line', async () => {
    const r = await lspQuery(s.daemon().url, { ...root, op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'typescript-language-server');
    assert.equal(r.body.incomplete, false);
    assert.deepEqual(at(r.body), [`src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`]);
  });

  test('pushed diagnostics find the type error; a clean file is clean and complete', async () => {
    const bad = await lspQuery(s.daemon().url, { ...root, op: 'diagnostics', path: 'src/broken.ts' });
    assert.equal(bad.status, 200, JSON.stringify(bad.body));
    const diags = completeDiagnostics(bad.body);
    assert.equal(diags.length, 1, JSON.stringify(diags));
    assert.equal(diags[0]!.range.start.line, lineOf(FX, 'src/broken.ts', 'export const count'));
    assert.match(diags[0]!.message, /not assignable to type 'number'/);
    const clean = await lspQuery(s.daemon().url, { ...root, op: 'diagnostics', path: 'src/app.ts' });
    assertClean(clean.body);
  });

  test('a .cjs file is JavaScript here too', async () => {
    const r = await lspQuery(s.daemon().url, { ...root, op: 'definition', path: 'src/legacy.cjs', ...position(FX, 'src/legacy.cjs', "shout('quiet')") });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(at(r.body), [`src/legacy.cjs:${lineOf(FX, 'src/legacy.cjs', 'function shout')}`]);
  });
});
