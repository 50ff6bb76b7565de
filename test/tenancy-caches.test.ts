// Issue 13's reproduction 6: DELETE a root, upload a different tree under the same
// key, and every answer is about the new tree. A real daemon, the real SERVE jail,
// the native TypeScript server: definition previews (the tree-lines cache, keyed by
// host path, used to serve the deleted tree's lines), /ask locate of a name the
// tree declares, and of a name found through the /ask use scan (a dependency's
// export: the scan of the deleted tree named a file the new one does not have).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeTar } from './helpers/ops.js';
import { cannotJail, postJson, shaOf } from './helpers/lsp-harness.js';
import { spawnServing, type Serving } from './helpers/daemon.js';

const root = { org: 'acme', repo: 'regen', sha: shaOf('tenancy-regen') };
const MAIN = "import { greet } from './lib';\nexport const out = greet('x');\n";
const TSCONFIG = JSON.stringify({
  compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [] },
  include: ['src'],
});
const greeter = (version: string, dts: string) => ({
  'node_modules/greeter/package.json': JSON.stringify({ name: 'greeter', version, types: 'index.d.ts' }),
  'node_modules/greeter/index.d.ts': dts,
});

/** A tree under the re-uploaded key: the same tsconfig and query file (main.ts), its own lib.ts, one file using the greeter dependency, and that dependency at `version`. */
const regenTree = (lib: string, use: [path: string, text: string], version: string, dts: string) => ({
  'tsconfig.json': TSCONFIG,
  'src/lib.ts': lib,
  'src/main.ts': MAIN,
  [use[0]]: use[1],
  ...greeter(version, dts),
});

const tree1 = regenTree(
  "export function greet(name: string): string {\n  return 'one ' + name;\n}\n",
  ['src/use1.ts', "import { wave } from 'greeter';\nexport const w = wave('one');\n"],
  '1.0.0',
  'export declare function wave(name: string): string;\n',
);
// Same key, same query file, other text: greet and wave each one line lower, with other words.
const tree2 = regenTree(
  "// the second tree\nexport function greet(name: string, loud = false): string {\n  return loud ? 'TWO ' + name : 'two ' + name;\n}\n",
  ['src/use2.ts', "import { wave } from 'greeter';\nexport const w = wave('two');\n"],
  '2.0.0',
  '// version two\nexport declare function wave(name: string, times?: number): string;\n',
);

type Loc = { path: string; range: { start: { line: number } }; preview?: string; external?: boolean; module?: string; version?: string };

describe('a re-uploaded key answers with the new tree (reproduction 6)', { skip: cannotJail() }, () => {
  let s: Serving;
  before(async () => {
    s = await spawnServing();
  });
  after(() => s?.close());

  const put = async (files: Record<string, string>) => {
    const r = await fetch(`${s.url}/v1/roots/${root.org}/${root.repo}/${root.sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: await makeTar(files),
    });
    assert.equal(r.status, 201, await r.text());
  };
  const definition = async () => {
    const r = await postJson(s.url, '/v1/code/lsp', {
      ...root,
      op: 'definition',
      path: 'src/main.ts',
      line: 1,
      character: MAIN.split('\n')[1]!.indexOf('greet'),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.incomplete, false, JSON.stringify(r.body));
    return r.body.locations as Loc[];
  };
  /** references of greet from its call, a page of one; the answer's status and body. */
  const references = (cursor?: string) =>
    postJson(s.url, '/v1/code/lsp', {
      ...root,
      op: 'references',
      path: 'src/main.ts',
      line: 1,
      character: MAIN.split('\n')[1]!.indexOf('greet'),
      limit: 1,
      ...(cursor ? { cursor } : {}),
    });
  const locate = async (symbol: string) => {
    const r = await postJson(s.url, '/ask', { ...root, symbol });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.locations as Loc[];
  };

  it('definition previews and /ask answers after DELETE and a re-upload are the new tree', async () => {
    await put(tree1);
    const d1 = await definition();
    assert.deepEqual(
      d1.map((l) => [l.path, l.range.start.line]),
      [['src/lib.ts', 0]],
    );
    assert.match(d1[0]!.preview!, /greet\(name: string\): string/);
    const g1 = await locate('greet');
    assert.deepEqual(
      g1.map((l) => [l.path, l.range.start.line]),
      [['src/lib.ts', 0]],
    );
    const w1 = await locate('wave');
    assert.deepEqual(
      w1.map((l) => [l.external, l.module, l.version, l.path, l.range.start.line]),
      [[true, 'greeter', '1.0.0', 'index.d.ts', 0]],
    );
    assert.match(w1[0]!.preview!, /wave\(name: string\): string/);
    const r1 = await references();
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    const oldCursor = String(r1.body.next_cursor);

    const del = await fetch(`${s.url}/v1/roots/${root.org}/${root.repo}/${root.sha}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    await put(tree2);

    const d2 = await definition();
    assert.deepEqual(
      d2.map((l) => [l.path, l.range.start.line]),
      [['src/lib.ts', 1]],
    );
    assert.match(d2[0]!.preview!, /greet\(name: string, loud = false\)/, "the preview is the new tree's line");
    const g2 = await locate('greet');
    assert.deepEqual(
      g2.map((l) => [l.path, l.range.start.line]),
      [['src/lib.ts', 1]],
    );
    assert.match(g2[0]!.preview!, /loud = false/);
    const w2 = await locate('wave');
    assert.deepEqual(
      w2.map((l) => [l.external, l.module, l.version, l.path, l.range.start.line]),
      [[true, 'greeter', '2.0.0', 'index.d.ts', 1]],
    );
    assert.match(w2[0]!.preview!, /times\?: number/);

    // A cursor from the deleted tree's answer does not page the new tree's; the new one's own do.
    const stale = await references(oldCursor);
    assert.equal(stale.status, 400, JSON.stringify(stale.body));
    assert.match(String(stale.body.message), /different query/);
    const pages: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await references(cursor);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      pages.push(...(r.body.locations as Loc[]).map((l) => `${l.path}:${l.range.start.line}`));
      cursor = r.body.next_cursor as string | undefined;
    } while (cursor !== undefined && pages.length < 10);
    assert.deepEqual(pages.sort(), ['src/lib.ts:1', 'src/main.ts:0', 'src/main.ts:1']);
  });
});
