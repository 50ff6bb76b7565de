// lspd's own notes go through the scrubber that cleans server output (issue 30,
// item 6). A tree's compile_commands.json written on a CI machine names that
// machine's paths, and a hostile one names the daemon's data dir: the note that
// arguments were removed quotes them, and once carried them out verbatim. Real
// clangd in the real SERVE jail answers right from the rebased database, the answer
// says what was removed, and no answer of any kind (definition, hover, symbols,
// diagnostics, references, the root's GET, /readyz) carries the data dir or a host path
// the database held.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLANGD } from '../src/lsp/servers/rows/c.js';
import { lacksBinaries } from './helpers/host.js';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail() ?? lacksBinaries('clangd', CLANGD);
const C = 'c-basic';
const root = { org: 'acme', repo: 'c-host-paths', sha: shaOf('c-host-paths') };
/** Host paths of a CI machine the database names besides the data dir. */
const CI_PATHS = ['/home/runner/cross', '/opt/ci/toolchain', '/builds/ci/args'];

type Loc = { path: string; range: { start: { line: number } } };

describe("lspd's notes are scrubbed: no answer carries a host path a compile database held", { skip }, () => {
  let d: Lspd;
  let tree: string;
  let dataDir: string;

  before(async () => {
    d = await startLspd();
    dataDir = d.config.dataDir;
    tree = mkdtempSync(join(tmpdir(), 'lspd-c-notes-'));
    cpSync(join(fixturesDir, C), tree, { recursive: true });
    // Written under a checkout inside the data dir (rebased onto the jail's path, as any
    // CI checkout is), with arguments a tree may not give clangd naming host paths.
    const checkout = `${dataDir}/checkout`;
    const entry = (file: string) => ({
      directory: checkout,
      file: `${checkout}/${file}`,
      arguments: [
        'clang',
        `-fplugin=${dataDir}/plugins/evil.so`,
        `@${dataDir}/args.rsp`,
        `-B${CI_PATHS[0]}/bin`,
        `--gcc-toolchain=${CI_PATHS[1]}`,
        `@${CI_PATHS[2]}/more.rsp`,
        `-I${checkout}/include`,
        '-c',
        `${checkout}/${file}`,
      ],
    });
    writeFileSync(join(tree, 'compile_commands.json'), JSON.stringify([entry('src/main.c'), entry('src/greet.c')]));
    await uploadDir(d.url, root, tree, '?warm=false');
  });
  after(async () => {
    await d?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  /** No host path the database named, nor the data dir, anywhere in an answer's text. */
  const clean = (what: string, body: unknown) => {
    const text = JSON.stringify(body);
    for (const p of [dataDir, ...CI_PATHS]) assert.ok(!text.includes(p), `${what} carries ${p}: ${text.slice(0, 2000)}`);
  };

  test('the answer is right, its note says what was removed, with the paths scrubbed', async () => {
    const call = position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")');
    const def = await lspQuery(d.url, { ...root, op: 'definition', path: 'src/main.c', ...call });
    assert.equal(def.status, 200, JSON.stringify(def.body));
    assert.equal(def.body.server, 'clangd');
    assert.deepEqual(
      (def.body.locations as Loc[]).map((l) => `${l.path}:${l.range.start.line}`),
      [`src/greet.c:${lineOf(C, 'src/greet.c', 'int greet(')}`],
    );
    const notes = (def.body.notes as string[]).join('\n');
    // Two entries of five removed arguments each; the first six are quoted, their paths scrubbed.
    assert.match(notes, /compile_commands\.json: removed 10 arguments a tree may not give clangd/);
    assert.match(notes, /"-fplugin=<path>" "@<path>" "-B<path>" "--gcc-toolchain=<path>" "@<path>"/);
    clean('definition', def.body);
  });

  test('hover, symbols, diagnostics, references, the root and /readyz carry no host path either', async () => {
    const call = position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")');
    for (const q of [
      { op: 'hover', path: 'src/main.c', ...call },
      { op: 'documentSymbols', path: 'src/main.c' },
      { op: 'diagnostics', path: 'src/main.c' },
      { op: 'references', path: 'src/main.c', ...call },
    ]) {
      const r = await lspQuery(d.url, { ...root, ...q });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(Array.isArray(r.body.notes) && (r.body.notes as string[]).length > 0, `${q.op} carries the session's notes`);
      clean(q.op, r.body);
    }
    const got = await getJson(d.url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`);
    assert.equal(got.status, 200);
    clean('GET root', got.body);
    const ready = await getJson(d.url, '/readyz');
    clean('/readyz', ready.body);
  });
});
