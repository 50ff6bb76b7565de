// Disk used by a directory tree, measured the way a quota would: allocated blocks
// (a sparse file claiming terabytes costs what it stores), plus a floor per entry
// so a fetch cannot exhaust inodes with millions of empty files at zero "bytes".
// Links are never followed: the dependency dir was written by a jailed process,
// and a symlink in it may point anywhere on the host.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Charged per directory entry on top of its blocks (one inode plus its directory slot). */
export const ENTRY_FLOOR_BYTES = 512;

/**
 * Bytes used under `dir`. Stops early, returning a value above `stopAbove`, once
 * the running total passes it: the caller only needs to know the bound was broken.
 */
export async function diskUsage(dir: string, stopAbove = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<number> {
  let total = 0;
  const stack = [dir];
  while (stack.length > 0) {
    if (signal?.aborted) break;
    const d = stack.pop()!;
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      continue; // removed while we walked (npm ci deletes and renames freely)
    }
    for (const name of names) {
      const p = join(d, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st) continue;
      total += st.blocks * 512 + ENTRY_FLOOR_BYTES;
      if (st.isDirectory()) stack.push(p);
      if (total > stopAbove) return total;
    }
  }
  return total;
}
