// Angular templates: the angular row (@angular/language-server over the pinned
// TypeScript 5) in the real SERVE jail on test/fixtures/angular-basic, whose
// node_modules/@angular/core is a stub of the decorator the components use (the real
// package is ~30 MB; the server only needs its declarations in the program). The same
// tree without it is refused 422 no_server saying why, and no session starts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from './helpers/fetch-env.js';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, uploadDir } from './helpers/lsp-harness.js';
import { acmeRoot, at, completeDiagnostics, langSuite } from './helpers/lang-suite.js';

const skip = cannotJail();
const FX = 'angular-basic';
const root = acmeRoot(FX);
const HTML = 'src/app/basket.component.html';
const TS = 'src/app/basket.component.ts';

describe('Angular templates (@angular/language-server) in the SERVE jail', { skip }, () => {
  const s = langSuite({ server: 'angular', uploads: [[root, FX]] });
  const ask = (body: Record<string, unknown>) => s.ask(root, body);

  test("definition from a component's .html template lands on the method in its class", async () => {
    const a = await ask({ op: 'definition', path: HTML, ...position(FX, HTML, 'basketLabel(', 1) });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`${TS}:${lineOf(FX, TS, 'basketLabel(count: number)')}`]);
  });

  test('hover in the template shows the member with its type and doc comment', async () => {
    const a = await ask({ op: 'hover', path: HTML, ...position(FX, HTML, 'itemCount)', 1) });
    assert.match(String(a.contents), /BasketComponent\.itemCount: number/);
    assert.match(String(a.contents), /How many items the basket holds/);
  });

  test('references from the template reach the class and the template', async () => {
    const a = await ask({ op: 'references', path: HTML, ...position(FX, HTML, 'basketLabel(', 1) });
    const got = at(a);
    for (const want of [`${TS}:${lineOf(FX, TS, 'basketLabel(count: number)')}`, `${HTML}:${lineOf(FX, HTML, 'basketLabel(')}`])
      assert.ok(got.includes(want), `${want} in ${JSON.stringify(got)}`);
  });

  test("diagnostics: a template's type error, by the Angular compiler", async () => {
    const path = 'src/app/broken.component.html';
    const diags = completeDiagnostics(await ask({ op: 'diagnostics', path }));
    const d = diags.find((x) => x.range.start.line === lineOf(FX, path, 'title.toFixed'));
    assert.ok(d, JSON.stringify(diags));
    assert.match(d.message, /Property 'toFixed' does not exist on type 'string'/);
  });

  test('without node_modules/@angular/core: 422 no_server saying why, and no session', async () => {
    const dir = scratchDir('lspd-angular-');
    cpSync(join(fixturesDir, FX), dir, { recursive: true });
    rmSync(join(dir, 'node_modules'), { recursive: true });
    const bare = acmeRoot('angular-bare', 'angular-bare');
    await uploadDir(s.daemon().url, bare, dir);
    const r = await lspQuery(s.daemon().url, { ...bare, op: 'hover', path: HTML, ...position(FX, HTML, 'itemCount)', 1) });
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error, 'no_server');
    assert.match(String(r.body.message), /Angular templates, which need @angular\/core in node_modules/);
    const got = await getJson(s.daemon().url, `/v1/roots/${bare.org}/${bare.repo}/${bare.sha}`);
    assert.deepEqual(got.body.sessions, []);
  });
});
