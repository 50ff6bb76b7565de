import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { blobId } from './git-tree.js';
import { TreeWriter } from './tree-writer.js';
import { stopWriterThreads } from './write-pool.js';

const dirs: string[] = [];
function emptyDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tree-writer-'));
  dirs.push(d);
  return d;
}
after(async () => {
  await stopWriterThreads();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function* chunked(data: Buffer, size: number): AsyncIterable<Buffer> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
}

describe('TreeWriter (through the writer thread)', () => {
  it('writes files, large files, implied directories, symlinks and hard links, in order', async () => {
    const root = emptyDir();
    const errs: unknown[] = [];
    const w = new TreeWriter(root, false, (e) => errs.push(e));
    w.dir('src');
    w.smallFile('src/a.ts', [Buffer.from('export const '), Buffer.from('a = 1;\n')], 20, false);
    w.smallFile('deep/er/run.sh', [Buffer.from('#!/bin/sh\n')], 10, true);
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 'x');
    big.write('head', 0);
    assert.equal(await w.largeFile('assets/big.bin', chunked(big, 64 * 1024), false, big.length), big.length);
    w.symlink('src/link.ts', 'a.ts');
    w.hardlink('src/hard.ts', 'src/a.ts');
    await w.close();
    assert.deepEqual(errs, []);
    assert.equal(readFileSync(join(root, 'src/a.ts'), 'utf8'), 'export const a = 1;\n');
    assert.equal(lstatSync(join(root, 'deep/er/run.sh')).mode & 0o111, 0o111);
    assert.ok(readFileSync(join(root, 'assets/big.bin')).equals(big));
    assert.equal(readlinkSync(join(root, 'src/link.ts')), 'a.ts');
    assert.equal(lstatSync(join(root, 'src/hard.ts')).ino, lstatSync(join(root, 'src/a.ts')).ino);
    // The git blob id of each file and symlink, in record order (a hard link has none of its own).
    assert.equal(w.digests().toString('hex'), [blobId('export const a = 1;\n'), blobId('#!/bin/sh\n'), blobId(big), blobId('a.ts')].join(''));
  });

  it("links a base tree's files beside its own (an incremental upload), never writing through them", async () => {
    const base = emptyDir();
    mkdirSync(join(base, 'src'));
    writeFileSync(join(base, 'src/kept.ts'), 'kept\n');
    symlinkSync('kept.ts', join(base, 'src/alias.ts'));
    const root = emptyDir();
    const w = new TreeWriter(root, false, () => {}, base);
    w.smallFile('src/new.ts', [Buffer.from('new\n')], 4, false);
    w.linkIn('src/kept.ts');
    w.linkIn('src/alias.ts');
    w.dir('empty');
    await w.close();
    assert.equal(lstatSync(join(root, 'src/kept.ts')).ino, lstatSync(join(base, 'src/kept.ts')).ino);
    assert.equal(readlinkSync(join(root, 'src/alias.ts')), 'kept.ts');
    assert.ok(lstatSync(join(root, 'empty')).isDirectory());
    assert.equal(w.digests().toString('hex'), blobId('new\n'));
  });

  it('many small files across many batches, and two uploads at once, each intact', async () => {
    const roots = [emptyDir(), emptyDir()];
    const writers = roots.map((r) => new TreeWriter(r, false, () => {}));
    for (let i = 0; i < 600; i++) {
      for (const [n, w] of writers.entries()) {
        await w.room(100);
        w.smallFile(`p${i % 7}/f${i}.txt`, [Buffer.from(`${n}:${i}`)], `${n}:${i}`.length, false);
      }
    }
    await Promise.all(writers.map((w) => w.close()));
    for (const [n, r] of roots.entries()) {
      for (const i of [0, 299, 599]) assert.equal(readFileSync(join(r, `p${i % 7}/f${i}.txt`), 'utf8'), `${n}:${i}`);
    }
  });

  it('a record queued while the thread is busy reaches disk without waiting for close()', async () => {
    const root = emptyDir();
    const w = new TreeWriter(root, false, () => {});
    w.smallFile('first.ts', [Buffer.from('1')], 1, false);
    await new Promise((r) => setImmediate(r)); // the first batch is now with the thread
    w.smallFile('second.ts', [Buffer.from('2')], 1, false); // held until the first is answered
    for (let i = 0; i < 200 && !existsSync(join(root, 'second.ts')); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(readFileSync(join(root, 'second.ts'), 'utf8'), '2');
    await w.close();
  });

  it('the first failing syscall is reported with its code, and nothing after it is written', async () => {
    const root = emptyDir();
    writeFileSync(join(root, 'taken.ts'), 'already here');
    const errs: unknown[] = [];
    const w = new TreeWriter(root, false, (e) => errs.push(e));
    w.smallFile('taken.ts', [Buffer.from('new')], 3, false);
    w.smallFile('later.ts', [Buffer.from('later')], 5, false);
    await assert.rejects(w.close(), { code: 'EEXIST' });
    assert.equal(errs.length, 1);
    assert.equal(readFileSync(join(root, 'taken.ts'), 'utf8'), 'already here'); // O_EXCL: never overwritten
    assert.throws(() => lstatSync(join(root, 'later.ts')), { code: 'ENOENT' });
  });

  it('a thread that stops fails the job it held, and the next job gets a new thread', async () => {
    const root = emptyDir();
    const w = new TreeWriter(root, false, () => {});
    w.smallFile('a.ts', [Buffer.from('a')], 1, false);
    await stopWriterThreads();
    await assert.rejects(w.close(), /writer thread stopped/);

    const again = emptyDir();
    const w2 = new TreeWriter(again, false, () => {});
    w2.smallFile('b.ts', [Buffer.from('b')], 1, false);
    await w2.close();
    assert.equal(readFileSync(join(again, 'b.ts'), 'utf8'), 'b');
  });
});
