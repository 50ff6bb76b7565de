import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree } from './remove-tree.js';

test('removeTree removes a tree, never what its links point at, and a missing one is no error', async () => {
  const base = mkdtempSync(join(tmpdir(), 'lspd-remove-'));
  try {
    const outside = join(base, 'outside.txt');
    writeFileSync(outside, 'keep');
    const tree = join(base, 'tree');
    mkdirSync(join(tree, 'a', 'b'), { recursive: true });
    writeFileSync(join(tree, 'a', 'b', 'f.ts'), 'x');
    symlinkSync(outside, join(tree, 'a', 'link'));
    symlinkSync(base, join(tree, 'dirlink'));
    await removeTree(tree);
    assert.equal(existsSync(tree), false);
    assert.equal(readFileSync(outside, 'utf8'), 'keep');
    await removeTree(tree);
    await assert.rejects(removeTree('bad\0path'));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("removeTree needs none of libuv's pool: it finishes while every thread of the pool is blocked", async () => {
  // fs.promises.rm queues each entry's operations on the pool every fs call of the
  // daemon shares (a stat behind a 40,000-file removal waited 701 ms). Here each pool
  // thread is held in open() of a FIFO until the test writes to it: a removal that
  // needed the pool could not finish.
  const base = mkdtempSync(join(tmpdir(), 'lspd-remove-'));
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const fifos = Array.from({ length: threads }, (_, i) => join(base, `fifo${i}`));
  try {
    const tree = join(base, 'tree');
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(tree, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(join(tree, `d${d}`, `f${f}.ts`), '');
    }
    await removeTree(join(base, 'not-there')); // the thread is loaded (its module is read through the pool)
    for (const f of fifos) execFileSync('mkfifo', [f]);
    const held = fifos.map((f) => open(f, 'r'));
    const done = await Promise.race([removeTree(tree).then(() => 'removed'), new Promise((r) => setTimeout(r, 20_000, 'still waiting after 20 s'))]);
    for (const f of fifos) closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
    for (const h of held) await (await h).close();
    assert.equal(done, 'removed');
    assert.equal(existsSync(tree), false);
  } finally {
    for (const f of fifos) {
      try {
        closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // no reader left, or never made
      }
    }
    rmSync(base, { recursive: true, force: true });
  }
});
