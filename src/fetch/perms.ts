// Ownership of what FETCH jails write. When lspd runs as root, every jail runs as
// its own host uid from the pool (src/jail/uid-pool.ts), not known before the
// spawn; a directory the daemon created, or one an earlier step's jail (another
// uid) wrote, is not writable by the next. So before a step its read-write binds
// are opened to every uid (no other jail can reach them: each jail sees only its
// own binds), and after the job everything is sealed: owned by root, 0755/0644,
// setuid/setgid bits gone, so no later jail of any uid can change what SERVE reads.
// Not root: every jail runs as the daemon's own uid and there is nothing to do.
// Walks never follow links, and run only while no jail writes the directory.
// A root-owned file with more than one link is left as it is: it is shared with
// something beyond the bind (the org's package store laid a tarball into the npm
// cache, or an output dir holds store files after a crash re-queued its job), and
// opening it to the jail would open every other name of it too.
import type { Stats } from 'node:fs';
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const isRoot = (): boolean => process.getuid?.() === 0;

async function walk(dir: string, visit: (p: string, isDir: boolean, mode: number, st: Stats) => Promise<void>): Promise<void> {
  const top = await lstat(dir).catch(() => undefined);
  if (!top || !top.isDirectory()) return;
  await visit(dir, true, top.mode, top);
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop()!;
    for (const name of await readdir(d).catch(() => [] as string[])) {
      const p = join(d, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st || st.isSymbolicLink()) continue;
      await visit(p, st.isDirectory(), st.mode, st);
      if (st.isDirectory()) stack.push(p);
    }
  }
}

/** Make `dir` and everything in it writable by any uid (root only; see header). */
export async function openForJail(dir: string): Promise<void> {
  if (!isRoot()) return;
  await walk(dir, async (p, isDir, mode, st) => {
    if (!isDir && st.uid === 0 && st.nlink > 1) return;
    const want = isDir ? 0o777 : mode & 0o111 ? 0o777 : 0o666;
    if ((mode & 0o7777) !== want) await chmod(p, want);
  });
}

/**
 * The dirs between `base` and `base/rel` (not `rel` itself, nor below it): root-owned
 * and 0755 as `seal` leaves dirs, so a SERVE uid can traverse to a sealed output
 * whatever the umask made them. Root only; nothing follows a link.
 */
export async function sealParents(base: string, rel: string): Promise<void> {
  if (!isRoot()) return;
  let p = base;
  for (const seg of rel.split('/').slice(0, -1)) {
    p = join(p, seg);
    const st = await lstat(p).catch(() => undefined);
    if (!st?.isDirectory()) return;
    await chmod(p, 0o755);
    await lchown(p, 0, 0);
  }
}

/** Root-owned, 0755 dirs and executables, 0644 files, no special bits (root only; see header). */
export async function seal(dir: string): Promise<void> {
  if (!isRoot()) return;
  await walk(dir, async (p, isDir, mode) => {
    // chmod before chown: a set-id bit must never sit on a root-owned file, even briefly.
    await chmod(p, isDir || mode & 0o111 ? 0o755 : 0o644);
    await lchown(p, 0, 0);
  });
}
