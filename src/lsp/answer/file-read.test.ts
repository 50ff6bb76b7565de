// file-read.ts on real files: line counting across the 64 KiB read chunks (a \r\n
// split between two reads is one terminator; a character split between two reads
// is one character), a file read whole once then read only as far as a page (its
// line count known, by file version), the reference an external location gets from
// its in-jail path, and the directories a deps read may land in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileRange, readRefOf, readableTops } from './file-read.js';

const CHUNK = 64 * 1024;
const tree = mkdtempSync(join(tmpdir(), 'lspd-file-read-'));
const read = (name: string, start = 0, end?: number, maxAnswerBytes = 1024 * 1024) =>
  readFileRange({ treeHostDir: tree }, { path: name, from: 'tree', start, ...(end !== undefined ? { end } : {}), maxAnswerBytes, maxFileBytes: 1 << 30 });

test('a \\r\\n split between two reads ends one line, not two', async () => {
  writeFileSync(join(tree, 'crlf'), 'a'.repeat(CHUNK - 1) + '\r\nb');
  const a = await read('crlf', 1);
  assert.deepEqual([a.total_lines, a.start, a.end, a.text], [2, 1, 2, 'b']);
  writeFileSync(join(tree, 'cr-end'), 'a'.repeat(CHUNK - 1) + '\r');
  const b = await read('cr-end', 0, 1);
  assert.deepEqual([b.total_lines, b.text.length, b.text.endsWith('\r')], [2, CHUNK, true]);
});

test('a character split between two reads is one character; a bad byte anywhere is not_utf8', async () => {
  writeFileSync(join(tree, 'emoji'), Buffer.concat([Buffer.from('x'.repeat(CHUNK - 2)), Buffer.from('\u{1F600}\nz')]));
  const a = await read('emoji', 0, 1);
  assert.equal(a.text, 'x'.repeat(CHUNK - 2) + '\u{1F600}\n');
  writeFileSync(join(tree, 'late-bad'), Buffer.concat([Buffer.from('ok\n'.repeat(50_000)), Buffer.from([0xff])]));
  await assert.rejects(read('late-bad', 0, 1), (e: { code?: string }) => e.code === 'not_utf8');
});

test('only the lines asked for are kept: a range deep in a large file', async () => {
  writeFileSync(join(tree, 'many'), Array.from({ length: 100_000 }, (_, i) => `l${i}`).join('\n'));
  const a = await read('many', 99_998, 100_005);
  assert.deepEqual([a.start, a.end, a.total_lines, a.text], [99_998, 100_000, 100_000, 'l99998\nl99999']);
});

test('a file read whole once is then read only as far as the page asked; another version of it is read whole again', async () => {
  const path = join(tree, 'paged');
  writeFileSync(path, Array.from({ length: 400_000 }, (_, i) => `line ${i}`).join('\n') + '\n');
  const size = statSync(path).size;
  // Bytes this process has read (every thread: libuv's file reads too), from the kernel.
  const readBytes = () => Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
  const r0 = readBytes();
  const first = await read('paged', 10, 13);
  const r1 = readBytes();
  const second = await read('paged', 20, 23);
  const r2 = readBytes();
  assert.deepEqual([first.total_lines, first.start, first.end, first.text], [400_001, 10, 13, 'line 10\nline 11\nline 12\n']);
  assert.deepEqual([second.total_lines, second.start, second.end, second.text, second.truncated], [400_001, 20, 23, 'line 20\nline 21\nline 22\n', false]);
  assert.ok(r1 - r0 >= size, `the first read scans the whole file: ${r1 - r0} of ${size} bytes`);
  assert.ok(r2 - r1 < 4 * CHUNK, `the second read stops at its page: ${r2 - r1} bytes of ${size}`);
  // A page the known count says runs past the end is read to the end, exactly as before.
  const tail = await read('paged', 399_999, 500_000);
  assert.deepEqual([tail.total_lines, tail.start, tail.end, tail.text], [400_001, 399_999, 400_001, 'line 399999\n']);
  // Rewritten (same name, same size): another version, read whole, its bad byte found.
  writeFileSync(path, Buffer.concat([readFileSync(path).subarray(0, size - 1), Buffer.from([0xff])]));
  await assert.rejects(read('paged', 20, 23), (e: { code?: string }) => e.code === 'not_utf8');
});

test('readRefOf: a dependency bind maps to its place in the deps dir; the tree to its path; nothing else', () => {
  const dirs = {
    treeHostDir: '/data/r/tree',
    depsHostDir: '/data/r/deps',
    mounts: [
      { host: '/data/r/deps/npm/top/node_modules', at: '/src/node_modules' },
      { host: '/data/r/deps/npm/ws/web/node_modules', at: '/src/web/node_modules' },
      { host: '/data/r/deps/go/pkg/mod', at: '/deps/go/pkg/mod' },
    ],
  };
  assert.deepEqual(readRefOf('/src/node_modules/zod/lib/types.d.ts', dirs), { from: 'deps', path: 'npm/top/node_modules/zod/lib/types.d.ts' });
  assert.deepEqual(readRefOf('/src/web/node_modules/@a/b/x.js', dirs), { from: 'deps', path: 'npm/ws/web/node_modules/@a/b/x.js' });
  assert.deepEqual(readRefOf('/deps/go/pkg/mod/example.com/m@v1.0.0/x.go', dirs), { from: 'deps', path: 'go/pkg/mod/example.com/m@v1.0.0/x.go' });
  assert.deepEqual(readRefOf('/src/vendor/a/b/c.php', dirs), { from: 'tree', path: 'vendor/a/b/c.php' });
  for (const p of ['/etc/passwd', '/src/../etc/passwd', '/deps', '/src', 'relative/x']) assert.equal(readRefOf(p, dirs), undefined, p);
  // Only the binds inside the deps dir may be read from it.
  assert.deepEqual(
    readableTops('deps', { ...dirs, mounts: [...dirs.mounts, { host: '/etc', at: '/src/etc' }] }),
    dirs.mounts.map((m) => m.host),
  );
  assert.deepEqual(readableTops('deps', { treeHostDir: '/t' }), []);
});
