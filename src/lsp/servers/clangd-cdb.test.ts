// clangd's generated compile database is bounded in bytes whatever the tree holds
// (reproduction 2 of issue 13: 100 sources and a large compile_flags.txt grew the
// daemon by 483 MiB, every flag copied into every entry), and carries no argument
// a tree may not give. Memory is asserted by what is generated and how: the total
// stays under the bound and no chunk is larger than one entry's share.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { arrayElements, clangdSessionFiles, defaultCdbLimits, CLANGD_CDB_DIR, type CdbLimits } from './clangd-cdb.js';

const DB = `${CLANGD_CDB_DIR}/compile_commands.json`;
type Entry = { directory: string; file: string; arguments: string[] };

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tree(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'lspd-cdb-'));
  dirs.push(d);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(d, rel, '..'), { recursive: true });
    writeFileSync(join(d, rel), text);
  }
  return d;
}

/** Generate, reading the stream chunk by chunk: the database, its size, its largest chunk, the notes. */
async function generate(dir: string, limits: Partial<CdbLimits> = {}) {
  const g = await clangdSessionFiles({ treeHostDir: dir, workspace: '', workspaceAt: '/src' }, { ...defaultCdbLimits, ...limits });
  const body = g.files[DB]!;
  assert.equal(typeof body, 'object', 'a stream, never one string');
  let text = '';
  let largestChunk = 0;
  for await (const chunk of body as AsyncIterable<string>) {
    largestChunk = Math.max(largestChunk, Buffer.byteLength(chunk));
    text += chunk;
  }
  return { db: JSON.parse(text) as Entry[], bytes: Buffer.byteLength(text), largestChunk, notes: g.notes };
}

describe('clangd compile database: bounded in bytes', () => {
  it('reproduction 2: many sources and a large compile_flags.txt stay under the byte bound, one entry in memory at a time', async () => {
    const flags = Array.from({ length: 4000 }, (_, i) => `-DFLAG_${i}=1`); // ~56 KiB, under the flags bound
    const files: Record<string, string> = { 'compile_flags.txt': flags.join('\n') };
    for (let i = 0; i < 2000; i++) files[`src/f${i}.c`] = `int f${i};\n`;
    const dir = tree(files);
    const limit = 4 * 1024 * 1024;
    const g = await generate(dir, { maxDatabaseBytes: limit });
    const flagsJsonBytes = Buffer.byteLength(flags.map((f) => JSON.stringify(f)).join(','));
    // Unbounded, this would be 2000 × ~70 KiB = ~140 MiB of JSON (and, as it was
    // built, an argument array per entry on the heap).
    assert.ok(g.bytes <= limit, `${g.bytes} bytes generated, bound ${limit}`);
    assert.ok(g.db.length > 0 && g.db.length < 2000, `${g.db.length} sources listed`);
    assert.ok(g.bytes + flagsJsonBytes + 512 > limit, 'it stopped only where the next entry would not fit');
    // The shared flags are the largest thing ever handed out: memory is one entry, not files × flags.
    assert.ok(g.largestChunk <= flagsJsonBytes, `largest chunk ${g.largestChunk}, flags ${flagsJsonBytes}`);
    for (const e of g.db) assert.deepEqual(e.arguments, ['clang', ...flags, '-c', e.file]);
    assert.equal(g.notes.length, 1);
    assert.match(g.notes[0]!, new RegExp(`stopped at the 4 MiB bound after ${g.db.length} sources`));
  });

  it('a compile_flags.txt over its byte bound is not used: fallback flags, and a note', async () => {
    const dir = tree({ 'compile_flags.txt': '-DX\n'.repeat(100_000), 'a.c': 'int a;\n' });
    const g = await generate(dir);
    assert.deepEqual(g.db[0]!.arguments, ['clang', '-I/src', '-I/src/include', '-I/src/src', '-c', '/src/a.c']);
    assert.match(g.notes.join('\n'), /compile_flags\.txt \(391 KiB\) is over the 64 KiB bound: not used/);
  });

  it('a compile_flags.txt with more flags than the bound is not used', async () => {
    const dir = tree({ 'compile_flags.txt': '-w\n'.repeat(5000), 'a.c': 'int a;\n' });
    const g = await generate(dir);
    assert.equal(g.db[0]!.arguments.length, 6);
    assert.match(g.notes.join('\n'), /5000 flags, over the bound of 4096/);
  });

  it("a tree's own database over the bound is not copied: its sources are listed instead", async () => {
    const big = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ directory: '/src', file: `f${i}.c`, arguments: ['cc', '-c', `f${i}.c`] })));
    const dir = tree({ 'compile_commands.json': big, 'a.c': 'int a;\n' });
    const g = await generate(dir, { maxDatabaseBytes: 16 * 1024 });
    assert.deepEqual(
      g.db.map((e) => e.file),
      ['/src/a.c'],
    );
    assert.match(g.notes.join('\n'), /compile_commands\.json \(\d+ KiB\) is over the 16 KiB bound: not used/);
  });

  it('a copied database is cut at the bound, still valid JSON, and says so', async () => {
    const db = JSON.stringify(Array.from({ length: 500 }, (_, i) => ({ directory: '/src', file: `/src/f${i}.c`, command: `cc -DX=${i} -c /src/f${i}.c` })));
    const dir = tree({ 'compile_commands.json': db });
    // Given back as `arguments`, the entries are larger than the `command`s they were:
    // a database just under the bound to read makes one over it to write.
    const g = await generate(dir, { maxDatabaseBytes: db.length });
    assert.ok(g.bytes <= db.length);
    assert.ok(g.db.length > 10 && g.db.length < 500);
    assert.deepEqual(g.db[3]!.arguments, ['cc', '-DX=3', '-c', '/src/f3.c']);
    assert.match(g.notes.join('\n'), /copied compile database stopped at the/);
  });
});

describe('clangd compile database: flags a tree may not give', () => {
  const plugin = ['-fplugin=./p.so', '-Xclang', '-load', '-Xclang', './p.so', '@evil.rsp', '--config=evil.cfg', '-B/src/bin'];

  it('compile_flags.txt: removed, the rest kept, a note naming them', async () => {
    const dir = tree({ 'compile_flags.txt': ['-DKEEP', ...plugin, '-Iinc'].join('\n'), 'a.c': 'int a;\n' });
    const g = await generate(dir);
    assert.deepEqual(g.db[0]!.arguments, ['clang', '-DKEEP', '-Iinc', '-c', '/src/a.c']);
    assert.equal(g.notes.length, 1);
    assert.match(g.notes[0]!, /^compile_flags\.txt: removed 8 arguments a tree may not give clangd .*"-fplugin=\.\/p\.so" "-Xclang" "-load"/);
  });

  it('a copied database: `arguments` and `command` entries both filtered, the driver a bare name', async () => {
    const db = [
      { directory: '/src', file: '/src/a.c', arguments: ['/src/tools/cc', '-DKEEP', ...plugin, '-c', '/src/a.c'] },
      { directory: '/src', file: '/src/b.cc', command: `/usr/bin/c++ -DKEEP ${plugin.join(' ')} -c /src/b.cc` },
      { directory: '/src', file: '/src/c.c', command: 'ccache gcc -c /src/c.c', output: 'c.o' },
      { file: 'no-directory.c', command: 'cc -c no-directory.c' },
      'not an object',
    ];
    const dir = tree({ 'compile_commands.json': JSON.stringify(db), 'a.c': '', 'b.cc': '', 'c.c': '' });
    const g = await generate(dir);
    assert.deepEqual(g.db, [
      { directory: '/src', file: '/src/a.c', arguments: ['cc', '-DKEEP', '-c', '/src/a.c'] },
      { directory: '/src', file: '/src/b.cc', arguments: ['c++', '-DKEEP', '-c', '/src/b.cc'] },
      { directory: '/src', file: '/src/c.c', arguments: ['gcc', '-c', '/src/c.c'], output: 'c.o' },
    ]);
    const notes = g.notes.join('\n');
    assert.match(notes, /compile_commands\.json: removed 16 arguments/);
    assert.match(notes, /dropped 2 entries that are not compile commands/);
  });

  it('a database that is not a JSON array is not used (never handed on for clangd to read its own way)', async () => {
    for (const text of ['{"not":"an array"}', '[{"directory":"/src","file":"a.c","arguments":["cc","-fplugin=p.so"]}', '[1,2] trailing']) {
      const dir = tree({ 'compile_commands.json': text, 'a.c': '' });
      const g = await generate(dir);
      assert.deepEqual(
        g.db.map((e) => e.file),
        ['/src/a.c'],
        text,
      );
      assert.equal(g.db[0]!.arguments.includes('-fplugin=p.so'), false);
      assert.match(g.notes.join('\n'), /is not a JSON array: not used/);
    }
  });
});

describe('arrayElements', () => {
  it('splits a top-level array without parsing it whole, strings and nesting respected', () => {
    const els = [{ a: '],[,{"' }, [1, [2, { b: '\\"}' }]], 'x,y', 3, null];
    assert.deepEqual(
      [...arrayElements(JSON.stringify(els, null, 2))].map((e) => JSON.parse(e) as unknown),
      els,
    );
    assert.deepEqual([...arrayElements(' [ ] ')], []);
    for (const bad of ['', '{}', '[1,2', '[1] x', '["a]']) assert.throws(() => [...arrayElements(bad)], SyntaxError, bad);
  });
});
