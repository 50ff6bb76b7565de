// POST /v1/check (issue 27): a patch applied in memory only to a stored root, and
// what it changes in diagnostics, in the changed files and the files that use them.
// Real TS 7 and pyright in the real SERVE jail. Patches are made by `git diff`, as an
// agent's would be. Isolation is asserted over many rounds: plain hover and
// diagnostics queries running beside checks never see the patch (each round asks a
// different `context`, so no answer comes from the result cache), and the stored
// tree is byte-for-byte what was uploaded after every check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cannotJail, fixturesDir, getJson, lspQuery, position, postJson, shaOf, startLspd, uploadFixture, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const rootOf = (fx: string) => ({ org: 'acme', repo: fx, sha: shaOf(`check-${fx}`) });

/** git's patch turning fixture files into `changes` (a path to its new text, or null: deleted). */
function patchOf(fx: string, changes: Record<string, string | null>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-check-'));
  try {
    for (const [p, text] of Object.entries(changes)) {
      const old = join(fixturesDir, fx, p);
      let before: string | undefined;
      try {
        before = readFileSync(old, 'utf8');
      } catch {
        before = undefined;
      }
      if (before !== undefined) (mkdirSync(dirname(join(dir, 'a', p)), { recursive: true }), writeFileSync(join(dir, 'a', p), before));
      if (text !== null) (mkdirSync(dirname(join(dir, 'b', p)), { recursive: true }), writeFileSync(join(dir, 'b', p), text));
    }
    mkdirSync(join(dir, 'a'), { recursive: true });
    mkdirSync(join(dir, 'b'), { recursive: true });
    const r = spawnSync('git', ['diff', '--no-index', '--no-prefix', '--no-renames', 'a', 'b'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    return r.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const fixture = (fx: string, p: string) => readFileSync(join(fixturesDir, fx, p), 'utf8');
type Diag = { path: string; message: string; range: { start: { line: number } } };

describe('POST /v1/check, in the SERVE jail', { skip }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd();
    for (const fx of ['ts-basic', 'callgraph-py', 'check-ts']) await uploadFixture(d.url, rootOf(fx), fx);
  });
  after(async () => {
    await d?.close();
  });

  const check = (fx: string, patch: string) => postJson(d.url, '/v1/check', { ...rootOf(fx), patch });

  // A new required parameter: both calls in app.ts break. broken.ts gains a line
  // above its one error, which moves but is not new.
  const breaking = patchOf('ts-basic', {
    'src/greet.ts': fixture('ts-basic', 'src/greet.ts').replace('export function greet(name: string)', 'export function greet(name: string, punct: string)'),
    'src/broken.ts': '// moved down a line\n' + fixture('ts-basic', 'src/broken.ts'),
  });

  test('TypeScript: a breaking patch gives a new error in each caller; an existing error moved is not new', async () => {
    const r = await check('ts-basic', breaking);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const files = r.body.files as string[];
    assert.ok(files.includes('src/app.ts') && files.includes('src/greet.ts') && files.includes('src/broken.ts'), JSON.stringify(files));
    const fresh = r.body.new as Diag[];
    const inApp = fresh.filter((x) => x.path === 'src/app.ts');
    assert.equal(inApp.length, 2, JSON.stringify(fresh));
    for (const x of inApp) assert.match(x.message, /Expected 2 arguments, but got 1/);
    assert.deepEqual(
      inApp.map((x) => x.range.start.line).sort(),
      [position('ts-basic', 'src/app.ts', "greet('world')").line, position('ts-basic', 'src/app.ts', "greet('again')").line].sort(),
    );
    // The new parameter is unused: a hint in greet.ts, and no other error anywhere.
    assert.equal(fresh.filter((x) => (x as { severity?: string }).severity === 'error').length, 2, `nothing else is new: ${JSON.stringify(fresh)}`);
    assert.deepEqual(r.body.fixed, []);
    assert.ok((r.body.unchanged as number) >= 1, 'broken.ts keeps its error');
    assert.equal(r.body.incomplete, false);
    assert.equal(r.body.untrusted, true);
  });

  test('TypeScript: a fixing patch lists the error under fixed and nothing new', async () => {
    const fixing = patchOf('ts-basic', { 'src/broken.ts': fixture('ts-basic', 'src/broken.ts').replace("'not a number'", '42') });
    const r = await check('ts-basic', fixing);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.new, []);
    const fixed = r.body.fixed as Diag[];
    assert.equal(fixed.length, 1, JSON.stringify(fixed));
    assert.equal(fixed[0]!.path, 'src/broken.ts');
    assert.match(fixed[0]!.message, /not assignable to type 'number'/);
  });

  test('TypeScript: added and deleted files; an import of the deleted file breaks, the added one is checked', async () => {
    const p = patchOf('ts-basic', {
      'src/extra.ts': "import { greet } from './greet.js';\nexport const n: number = greet('x');\n",
      'src/broken.ts': null,
    });
    const r = await check('ts-basic', p);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const fresh = r.body.new as Diag[];
    assert.ok(
      fresh.some((x) => x.path === 'src/extra.ts' && /not assignable to type 'number'/.test(x.message)),
      JSON.stringify(fresh),
    );
    assert.ok(!(r.body.files as string[]).includes('src/broken.ts'));
    // And nothing of it stays: the same check again answers the same.
    const again = await check('ts-basic', p);
    assert.deepEqual(again.body.new, r.body.new);
  });

  test('TypeScript: each check sees its own patch only, whatever the one before it left on the scratch session', async () => {
    // The scratch session keeps a pulling server's patch until the next check (src/check/ `patched`):
    // that check must revert what its own patch does not make, close a file only the last one added,
    // and answer the same patch sent twice the same.
    const first = await check('ts-basic', breaking);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((first.body.new as Diag[]).filter((x) => x.path === 'src/app.ts').length, 2, JSON.stringify(first.body.new));
    const again = await check('ts-basic', breaking);
    assert.deepEqual(again.body.new, first.body.new);
    assert.deepEqual(again.body.fixed, first.body.fixed);
    const app = fixture('ts-basic', 'src/app.ts');
    const appOnly = await check('ts-basic', patchOf('ts-basic', { 'src/app.ts': '// a comment\n' + app }));
    assert.equal(appOnly.status, 200, JSON.stringify(appOnly.body));
    assert.deepEqual(appOnly.body.new, [], 'greet.ts is back to its stored text: both calls of greet are right again');
    const withExtra = await check(
      'ts-basic',
      patchOf('ts-basic', { 'src/extra.ts': 'export const extra = 1;\n', 'src/app.ts': app + "export { extra } from './extra.js';\n" }),
    );
    assert.equal(withExtra.status, 200, JSON.stringify(withExtra.body));
    assert.deepEqual(withExtra.body.new, []);
    const withoutExtra = await check('ts-basic', patchOf('ts-basic', { 'src/app.ts': app + "export { extra } from './extra.js';\n" }));
    assert.equal(withoutExtra.status, 200, JSON.stringify(withoutExtra.body));
    const fresh = withoutExtra.body.new as Diag[];
    assert.ok(
      fresh.some((x) => x.path === 'src/app.ts' && /Cannot find module '\.\/extra\.js'/.test(x.message)),
      `the file only the check before added is gone: ${JSON.stringify(fresh)}`,
    );
  });

  test('TypeScript: the files checked are those using what the patch changes, followed through the changed file', async () => {
    const lib = fixture('check-ts', 'src/lib.ts');
    const files = async (text: string) => {
      const r = await check('check-ts', patchOf('check-ts', { 'src/lib.ts': text }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return { files: [...(r.body.files as string[])].sort(), fresh: r.body.new as Diag[] };
    };
    // area's users only: the files using describe or unit cannot see a difference.
    const area = await files(lib.replace('area(size: number)', 'area(size: number, scale: number)'));
    assert.deepEqual(area.files, ['src/lib.ts', 'src/uses-area.ts']);
    assert.ok(
      area.fresh.some((x) => x.path === 'src/uses-area.ts' && /Expected 2 arguments/.test(x.message)),
      JSON.stringify(area.fresh),
    );
    // Shape is used by describe's signature in lib.ts: describe changes with it, so its users are checked.
    const shape = await files(lib.replace('sides: number;', 'sides: string;'));
    assert.deepEqual(shape.files, ['src/lib.ts', 'src/uses-describe.ts']);
    assert.ok(
      shape.fresh.some((x) => x.path === 'src/uses-describe.ts' && /not assignable to type 'string'/.test(x.message)),
      JSON.stringify(shape.fresh),
    );
    // A change outside every declaration (an export list): every user is checked.
    const all = await files(lib + 'export { area as areaOf };\n');
    assert.deepEqual(all.files, ['src/lib.ts', 'src/uses-area.ts', 'src/uses-describe.ts', 'src/uses-unit.ts']);
    assert.deepEqual(all.fresh, []);
  });

  test('a patch that does not apply is 422 naming the file and hunk; malformed or out of the root 400; too large 413', async () => {
    const stale = breaking.replace('export function greet(name: string): string', 'export function greet(nom: string): string');
    const r = await check('ts-basic', stale);
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error, 'patch_does_not_apply');
    assert.equal(r.body.path, 'src/greet.ts');
    assert.equal(r.body.hunk, 1);
    assert.match(String(r.body.message), /hunk 1 of src\/greet\.ts/);
    const bad = await check('ts-basic', '--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1,3 +1,3 @@\n-x\n');
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.match(String(bad.body.message), /patch/);
    const out = await check('ts-basic', '--- a/../x.ts\n+++ b/../x.ts\n@@ -1 +1 @@\n-x\n+y\n');
    assert.equal(out.status, 400, JSON.stringify(out.body));
    const huge = await check('ts-basic', '+'.repeat(d.config.maxPatchBytes + 1));
    assert.equal(huge.status, 413, JSON.stringify(huge.body));
    assert.equal(huge.body.limit, 'patch');
    const missing = await postJson(d.url, '/v1/check', { ...rootOf('ts-basic'), sha: shaOf('never'), patch: breaking });
    assert.equal(missing.status, 409, JSON.stringify(missing.body));
  });

  test('isolation: plain hover and diagnostics beside 20 checks never see the patch, and the stored tree is untouched', async () => {
    const root = rootOf('ts-basic');
    const call = position('ts-basic', 'src/app.ts', "greet('world')");
    for (let round = 0; round < 20; round++) {
      // A different context each round: every plain answer below is asked of the server, not the cache.
      const [c, hover, diags] = await Promise.all([
        check('ts-basic', breaking),
        lspQuery(d.url, { ...root, op: 'hover', path: 'src/app.ts', ...call, context: round }),
        lspQuery(d.url, { ...root, op: 'diagnostics', path: 'src/app.ts', context: round }),
      ]);
      assert.equal(c.status, 200, JSON.stringify(c.body));
      assert.equal((c.body.new as Diag[]).filter((x) => x.path === 'src/app.ts').length, 2, `round ${round}: ${JSON.stringify(c.body.new)}`);
      assert.equal(hover.status, 200, JSON.stringify(hover.body));
      assert.match(String(hover.body.contents), /greet\(name: string\): string/, `round ${round}`);
      assert.doesNotMatch(String(hover.body.contents), /punct/, `round ${round}`);
      assert.equal(diags.status, 200, JSON.stringify(diags.body));
      assert.deepEqual(diags.body.diagnostics, [], `round ${round}: the plain app.ts has no error`);
    }
    // Nothing was written into the stored tree.
    assert.equal(readFileSync(join(d.store.treeDir(root), 'src/greet.ts'), 'utf8'), fixture('ts-basic', 'src/greet.ts'));
    assert.equal(readFileSync(join(d.store.treeDir(root), 'src/broken.ts'), 'utf8'), fixture('ts-basic', 'src/broken.ts'));
    const sessions = (await getJson(d.url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`)).body.sessions as unknown[];
    assert.ok(sessions.length >= 2, 'a plain session and the scratch one');
  });

  test('Python (pyright): a new required parameter breaks both callers in another module', async () => {
    const p = patchOf('callgraph-py', {
      'pkg/util.py': fixture('callgraph-py', 'pkg/util.py').replace('def leaf(x: int) -> int:', 'def leaf(x: int, y: int) -> int:'),
    });
    const r = await check('callgraph-py', p);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const fresh = r.body.new as Diag[];
    assert.ok(
      fresh.some((x) => x.path === 'pkg/main.py' && /"y"/.test(x.message)),
      JSON.stringify(fresh),
    );
    assert.ok(
      fresh.some((x) => x.path === 'pkg/util.py' && /"y"/.test(x.message)),
      JSON.stringify(r.body),
    );
    assert.deepEqual(r.body.fixed, []);
    const plain = await lspQuery(d.url, { ...rootOf('callgraph-py'), op: 'diagnostics', path: 'pkg/main.py', context: 3 });
    assert.deepEqual(plain.body.diagnostics, []);
  });
});
