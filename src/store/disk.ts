// Small disk operations the store needs for durability and accounting: flushing a
// finished tree before it becomes visible, fsync of directories (so a rename
// survives a power cut), and measuring a directory's size without following links.
import { execFile } from 'node:child_process';
import { lstat, open, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/**
 * Flush every dirty page of the filesystem holding `path` (syncfs(2), through
 * coreutils `sync -f`: Node has no binding). One call after a whole tree is
 * written costs one writeback, where an fsync per file would cost a journal
 * commit per file. Without it, a power cut after the rename could leave a root
 * that is visible but whose files are empty, forever (roots are immutable).
 */
export async function syncFilesystem(path: string): Promise<void> {
  await execFileP('sync', ['-f', path], { timeout: 10 * 60_000 });
}

/** fsync a directory, making the entries created or renamed in it durable (fsync(2) "NOTES"). */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Disk the entries under `dir` hold, as `du` counts it: allocated blocks, each
 * inode once (hard links within it share), directories included; links are
 * counted, never followed; 0 if absent. One operation at a time (a fetch wrote it).
 * `ownOnly`: leave out files with names elsewhere too (links to another root's).
 * `shared`: files whose inode it names are left out (the org's package store's, charged there).
 */
export async function dirBytes(dir: string, ownOnly = false, shared?: (ino: number) => boolean): Promise<number> {
  let total = 0;
  const seen = new Set<number>();
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop()!;
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      continue;
    }
    for (const name of names) {
      const p = join(d, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st) continue;
      if (st.nlink > 1 && !st.isDirectory()) {
        if (ownOnly || seen.has(st.ino) || shared?.(st.ino)) continue;
        seen.add(st.ino);
      }
      total += st.blocks * 512;
      if (st.isDirectory()) stack.push(p);
    }
  }
  return total;
}

/**
 * True when the process umask strips bits from a 0644 file created in `dir`; the
 * writer then chmods what it creates. (process.umask() without an argument is
 * deprecated: it briefly changes the umask for every thread. A probe file answers
 * the same question safely.)
 */
export async function umaskStripsModes(dir: string): Promise<boolean> {
  const probe = join(dir, `.mode-probe-${process.pid}-${Date.now()}`);
  const fh = await open(probe, 'wx', 0o644);
  try {
    const mode = (await fh.stat()).mode & 0o777;
    await fh.sync();
    return mode !== 0o644;
  } finally {
    await fh.close();
    await unlink(probe);
  }
}
