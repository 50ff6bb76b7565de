// The directory model of disk-charge.ts against a real directory on the data dir's
// filesystem: packed while it fits one block, an index root and leaves past it.
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { directoryDiskBytes } from './disk-charge.js';

const B = 4096;
/** ext4_dir_entry_2 of a name of `n` bytes: 8 and the name padded to 4. */
const dirent = (n: number) => 8 + Math.ceil(n / 4) * 4;

/** Blocks a real directory of `names` takes. */
function realDirBytes(names: string[]): number {
  const d = mkdtempSync(join(tmpdir(), 'lspd-dirs-'));
  try {
    for (const n of names) closeSync(openSync(join(d, n), 'w'));
    return statSync(d).blocks * 512;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}

test('a directory whose entries fit its first block is charged that block, as the disk holds it', () => {
  // 300 names of 2-4 bytes: 3,600 bytes of entries, one block packed (a flat 1.5x said two).
  const names = Array.from({ length: 300 }, (_, i) => `h${i}`);
  const raw = names.reduce((n, s) => n + dirent(s.length), 0);
  assert.equal(directoryDiskBytes(raw, B), B);
  assert.equal(realDirBytes(names), B);
});

test('past one block a directory is charged its index root and at least the two leaves of the first split', () => {
  assert.equal(directoryDiskBytes(B - 24 + 4, B), 3 * B);
  // 900 names of 2-4 bytes (the hostile hard-link fan-out's directory): five blocks.
  const names = Array.from({ length: 900 }, (_, i) => `h${i}`);
  const raw = names.reduce((n, s) => n + dirent(s.length), 0);
  assert.equal(directoryDiskBytes(raw, B), 5 * B);
  const real = realDirBytes(names);
  // The leaves' fill follows the filesystem's hash seed: within a block of the model.
  assert.ok(Math.abs(real - 5 * B) <= B, `900 entries take ${real} B on disk, the model says ${5 * B}`);
});
