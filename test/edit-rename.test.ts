// rename on /v1/code/lsp (issue 27): the server's WorkspaceEdit comes back as one
// unified diff that `git apply` takes on a copy of the uploaded tree, and as the
// same edits per file. Real servers in the real SERVE jail: TS 7, pyright, gopls,
// clangd, each renaming a function used across files; what can't be renamed (a
// library's name) is 422 cannot_rename with the server's reason; a bad newName is 400.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, lspQuery, position, postJson, shaOf, startLspd, uploadFixture, type Lspd } from './helpers/lsp-harness.js';
import { appliedToFixture } from './helpers/git-apply.js';

const skip = cannotJail();
const rootOf = (fx: string) => ({ org: 'acme', repo: fx, sha: shaOf(`rename-${fx}`) });

describe('rename as a patch, in the SERVE jail', { skip }, () => {
  let d: Lspd;
  const scratch: string[] = [];
  before(async () => {
    d = await startLspd();
    for (const fx of ['ts-basic', 'callgraph-py', 'callgraph-go', 'c-basic']) await uploadFixture(d.url, rootOf(fx), fx);
  });
  after(async () => {
    await d?.close();
    for (const s of scratch) rmSync(s, { recursive: true, force: true });
  });

  const rename = async (fx: string, path: string, needle: string, offset: number, newName: string) => {
    const r = await lspQuery(d.url, { ...rootOf(fx), op: 'rename', path, ...position(fx, path, needle, offset), newName });
    return r;
  };
  const renamed = async (fx: string, path: string, needle: string, offset: number, newName: string) => {
    const r = await rename(fx, path, needle, offset, newName);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.untrusted, true);
    const files = (r.body.files as { path: string; edits: unknown[] }[]).map((f) => f.path);
    return { dir: appliedToFixture(fx, String(r.body.patch), scratch), files, body: r.body };
  };
  const read = (dir: string, p: string) => readFileSync(join(dir, p), 'utf8');

  test('TypeScript: a function renamed in its file and where it is imported; a method of the same name is not', async () => {
    const { dir, files } = await renamed('ts-basic', 'src/greet.ts', 'function greet', 'function '.length, 'welcome');
    assert.deepEqual(files, ['src/app.ts', 'src/greet.ts']);
    assert.match(read(dir, 'src/greet.ts'), /export function welcome\(name: string\): string/);
    const app = read(dir, 'src/app.ts');
    assert.match(app, /import \{ welcome, Person, type Greeter \} from '\.\/greet\.js';/);
    assert.match(app, /const message = welcome\('world'\);/);
    assert.match(app, /alice\.greet\('Bob'\) \+ welcome\('again'\)/, 'Person.greet is another symbol');
  });

  test('Python (pyright): a function renamed across modules', async () => {
    const { dir, files } = await renamed('callgraph-py', 'pkg/util.py', 'def leaf', 'def '.length, 'leaf_node');
    assert.deepEqual(files, ['pkg/main.py', 'pkg/util.py']);
    assert.match(read(dir, 'pkg/main.py'), /from pkg\.util import leaf_node, mid/);
    assert.match(read(dir, 'pkg/main.py'), /return mid\(1\) \+ leaf_node\(2\)/);
    assert.match(read(dir, 'pkg/util.py'), /def leaf_node\(/);
    assert.doesNotMatch(read(dir, 'pkg/util.py'), /\bleaf\(/);
  });

  test('Go (gopls): an exported function renamed across packages', async () => {
    const { dir, files } = await renamed('callgraph-go', 'calc/calc.go', 'func Leaf', 'func '.length, 'Base');
    assert.deepEqual(files, ['calc/calc.go', 'main.go']);
    assert.match(read(dir, 'main.go'), /return calc\.Mid\(1\) \+ calc\.Base\(2\)/);
    assert.match(read(dir, 'calc/calc.go'), /func Base\(x int\) int/);
    assert.match(read(dir, 'calc/calc.go'), /return Base\(x\) \* 2/);
  });

  test('C (clangd): a function renamed in its header, its definition and its callers', async () => {
    const { dir, files } = await renamed('c-basic', 'src/greet.c', 'int greet(', 'int '.length, 'salute');
    assert.ok(files.includes('src/greet.c') && files.includes('include/greet.h'), JSON.stringify(files));
    assert.match(read(dir, 'include/greet.h'), /int salute\(char \*out, int size, const char \*name\);/);
    assert.match(read(dir, 'src/greet.c'), /int salute\(char \*out/);
    assert.match(read(dir, 'src/greet.c'), /return salute\(out, size, p->name\)/);
    if (files.includes('src/main.c')) assert.match(read(dir, 'src/main.c'), /salute\(buf, sizeof buf, "world"\)/);
  });

  test('by name: /ask op rename gives the same patch as the position; newName is required there', async () => {
    const byPos = await rename('callgraph-py', 'pkg/util.py', 'def leaf', 'def '.length, 'leaf_node');
    const byName = await postJson(d.url, '/ask', { ...rootOf('callgraph-py'), symbol: 'pkg.util.leaf', op: 'rename', newName: 'leaf_node' });
    assert.equal(byName.status, 200, JSON.stringify(byName.body));
    assert.equal(byName.body.patch, byPos.body.patch);
    const none = await postJson(d.url, '/ask', { ...rootOf('callgraph-py'), symbol: 'pkg.util.leaf', op: 'rename' });
    assert.equal(none.status, 400, JSON.stringify(none.body));
    assert.match(String(none.body.message), /newName/);
  });

  test('refused: a name from the library is 422 cannot_rename with the reason; a bad newName is 400', async () => {
    const lib = await rename('ts-basic', 'src/greet.ts', 'string', 0, 'text');
    assert.equal(lib.status, 422, JSON.stringify(lib.body));
    assert.equal(lib.body.error, 'cannot_rename');
    assert.match(String(lib.body.message), /Cannot rename here: .+/);
    for (const bad of ['', 'two words', '9lives', 'a.b', 'x'.repeat(300)]) {
      const r = await rename('ts-basic', 'src/greet.ts', 'function greet', 'function '.length, bad);
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${JSON.stringify(r.body)}`);
      assert.match(JSON.stringify(r.body), /newName/);
    }
  });
});
