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
//
// The walk runs on a thread of its own with synchronous calls (store-worker.js
// says why), in the org's turn, so no sweep removes an entry it is linking.
import { runStoreWorker, type PackageStore } from './package-store.js';

export interface DedupeCount {
  linked: number;
  stored: number;
  /** Files left the root's own, by errno. */
  failed: Record<string, number>;
}

/** Link every file under each of `dirs` (sealed output dirs of one org's root) to the org's store. */
export async function dedupeFiles(store: PackageStore, org: string, dirs: readonly string[]): Promise<DedupeCount> {
  return store.inTurn(org, async () => {
    const top = await store.dirOf(org, 'files');
    const r = await runStoreWorker<{ linked: number; stored: [number, number][]; failed: Record<string, number> }>({ op: 'dedupe', top, dirs: [...dirs] });
    store.addedAll(org, 'files', r.stored);
    store.hit(org, 'files', r.linked);
    if (Object.keys(r.failed).length > 0) store.warn({ org, failed: r.failed }, 'package store: some files were not linked');
    return { linked: r.linked, stored: r.stored.length, failed: r.failed };
  });
}
