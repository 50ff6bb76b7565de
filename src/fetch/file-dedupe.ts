// Fetched files by content in the org's package store (package-store.ts): after a
// job's output dirs are sealed (root-owned, 0644/0755, no jail runs on them), each
// regular file is hashed (sha256) and either replaced by a link to the store's copy
// of the same bytes and mode, or becomes that copy (its inode is linked into the
// store: sealed, it is the daemon's). So the 100 packages two lockfiles share are one
// inode each, whichever commit fetched them, for every ecosystem's output.
//
// The replacement is a link under a temp name in the same dir renamed over the
// file: a reader (a SERVE jail already bound on it) sees the old bytes or the same
// bytes. Not linked: empty files (no blocks to share), files with another name
// (the store's already, a donor root's, or a link the jail made), and a file whose
// link would fail (EMLINK: ext4's 65,000 links to one inode; EXDEV): that root
// keeps, and is charged, its own copy.
import { link, lstat, mkdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { hashFile, walkFiles, type PackageStore } from './package-store.js';

/** Files hashed at once: enough to overlap reads, few enough to leave the disk to others. */
const PARALLEL = 4;

export interface DedupeCount {
  linked: number;
  stored: number;
}

/** Link every file under each of `dirs` (sealed output dirs of one org's root) to the org's store. */
export async function dedupeFiles(store: PackageStore, org: string, dirs: readonly string[]): Promise<DedupeCount> {
  return store.inTurn(org, async () => {
    const top = await store.dirOf(org, 'files');
    const count: DedupeCount = { linked: 0, stored: 0 };
    const pending = new Set<Promise<void>>();
    for (const dir of dirs) {
      await walkFiles(dir, async (path, f) => {
        const st = f.st;
        // Sealed files the fetch made alone: not empty, root's, no other name (a store
        // link already, a donor's, or a link the jail made: left as they are).
        if (st.size === 0 || st.uid !== 0 || st.nlink > 1) return;
        const p = one(store, org, top, path, st.mode, st.ino, st.blocks, count).catch((err: unknown) =>
          store.warn({ org, err: (err as NodeJS.ErrnoException).code ?? String(err) }, 'package store: a file was not linked'),
        );
        pending.add(p);
        void p.finally(() => pending.delete(p));
        if (pending.size >= PARALLEL) await Promise.race(pending);
      });
    }
    await Promise.all(pending);
    store.hit(org, 'files', count.linked);
    return count;
  });
}

async function one(store: PackageStore, org: string, top: string, path: string, mode: number, ino: number, blocks: number, count: DedupeCount): Promise<void> {
  const hex = await hashFile(path, 'sha256');
  const dir = join(top, hex.slice(0, 2));
  const entry = join(dir, hex.slice(2) + (mode & 0o111 ? 'x' : ''));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    const there = await lstat(entry).catch(() => undefined);
    if (there) {
      if (there.ino === ino) return;
      const tmp = store.tempName(join(path, '..'));
      try {
        await link(entry, tmp);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue; // swept meanwhile: this copy becomes the entry
        if (code === 'EMLINK' || code === 'EXDEV') return;
        throw err;
      }
      await rename(tmp, path).catch(async (err: unknown) => {
        await unlink(tmp).catch(() => undefined);
        throw err;
      });
      count.linked++;
      return;
    }
    try {
      await link(path, entry);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      if (code === 'EMLINK' || code === 'EXDEV') return;
      throw err;
    }
    count.stored++;
    store.added(org, 'files', ino, blocks);
    return;
  }
}
