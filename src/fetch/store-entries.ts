// What every archive kind of the package store (package-store.ts: npm tarballs,
// wheels, composer dists) does the same way: check an entry again before it is
// given out, copy a jail-written download in through its digest, make the dirs a
// tool's cache expects without following a link, and hold entries by links under
// <deps>/package-refs/<kind>/ (what keeps them through a sweep).
import { constants } from 'node:fs';
import { link, lstat, mkdir, open, readdir, unlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { hashFile, placeEntry, type PackageStore, type StoreKind } from './package-store.js';

/** <deps>-relative dir of a root's references to the store's archives (links: a root holds what its lockfiles named). Daemon-only, never bound. */
export const PACKAGE_REFS_REL = 'package-refs';

export type Digest = 'sha1' | 'sha256' | 'sha512';

/**
 * Whether the store's entry at `path` still has the bytes its name says; one that
 * does not leaves the store (and is never given to a fetch). False too when it is gone.
 */
export async function entryIntact(store: PackageStore, org: string, kind: StoreKind, path: string, algorithm: Digest, hex: string): Promise<boolean> {
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isFile()) return false;
  if ((await hashFile(path, algorithm, st.size).catch(() => '')) === hex) return true;
  store.warn({ org, kind, digest: hex.slice(0, 16) }, 'package store: an entry no longer matches its digest; dropped');
  await unlink(path).catch(() => undefined);
  store.dropped(org, kind, st.ino, st.blocks);
  return false;
}

/**
 * Copy a jail-written file into the store through its digest: the daemon's own inode
 * (root-owned, 0644), placed at `dir/<name(hex)>` only when `name` accepts the digest
 * (an absent name: not stored). A copy, not a link: the file is the jail uid's, and a
 * later jail of that uid must never own a store inode. The digest, or undefined.
 */
export async function copyVerified(
  store: PackageStore,
  org: string,
  kind: StoreKind,
  from: string,
  dir: string,
  algorithm: Digest,
  name: (hex: string) => string | undefined,
): Promise<string | undefined> {
  let src;
  try {
    src = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  const tmp = store.tempName(dir);
  let dest: string | undefined;
  let hex: string | undefined;
  try {
    if (!(await src.stat()).isFile()) return undefined;
    const out = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    try {
      const h = createHash(algorithm);
      const buf = Buffer.allocUnsafe(256 * 1024);
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        h.update(buf.subarray(0, bytesRead));
        await out.write(buf, 0, bytesRead);
      }
      hex = h.digest('hex');
      const n = name(hex);
      if (n !== undefined) {
        dest = join(dir, n);
        await out.chmod(0o644);
      }
    } finally {
      await out.close();
    }
  } finally {
    await src.close();
    if (dest === undefined) await unlink(tmp).catch(() => undefined);
  }
  if (dest === undefined) return undefined;
  if (await placeEntry(tmp, dest)) {
    const st = await lstat(dest);
    store.added(org, kind, st.ino, st.blocks);
  }
  return hex;
}

/** Make (or find) base/segs one level at a time; false when a component is anything but a real directory (a link a jail left). */
export async function realDirs(base: string, segs: string[]): Promise<boolean> {
  let p = base;
  for (const seg of segs) {
    p = join(p, seg);
    let st = await lstat(p).catch(() => undefined);
    if (!st) {
      await mkdir(p).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      st = await lstat(p);
    }
    if (!st.isDirectory()) return false;
  }
  return true;
}

/** Link `from` at `to` unless it cannot be (gone, there already, too many links, another device): the caller then does without. */
export async function linkOrSkip(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (err) {
    if (!['ENOENT', 'EEXIST', 'EMLINK', 'EXDEV'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    return false;
  }
}

/** The root holds each of `names` of the store's `kind` dir by a link in <deps>/package-refs/<kind>/. */
export async function holdEntries(storeDir: string, names: Iterable<string>, depsDir: string, kind: StoreKind): Promise<void> {
  const refs = join(depsDir, PACKAGE_REFS_REL, kind);
  await mkdir(refs, { recursive: true, mode: 0o700 });
  for (const n of names) await linkOrSkip(join(storeDir, n), join(refs, n));
}

/** A root that links an earlier root's workspaces holds that root's archives too (they outlive it while we stand). */
export async function linkPackageRefs(fromDeps: string, toDeps: string): Promise<void> {
  const from = join(fromDeps, PACKAGE_REFS_REL);
  for (const kind of await readdir(from).catch(() => [] as string[])) {
    if (!(await lstat(join(from, kind)).catch(() => undefined))?.isDirectory()) continue;
    const names = await readdir(join(from, kind)).catch(() => [] as string[]);
    if (names.length === 0) continue;
    const to = join(toDeps, PACKAGE_REFS_REL, kind);
    await mkdir(to, { recursive: true, mode: 0o700 });
    for (const n of names) await linkOrSkip(join(from, kind, n), join(to, n));
  }
}
