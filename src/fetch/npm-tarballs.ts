// npm tarballs in the org's package store (package-store.ts), by the sha512 of the
// lockfile integrity they were verified against.
//
// In: npm (pacote) reads a tarball from its cache by digest, with no request, when
// the lockfile gives its integrity and resolved URL, and it verifies what it reads
// (cacache's byDigest stream: a mismatch is EINTEGRITY, and pacote then removes the
// cached copy and downloads it). So before `npm ci` each tarball the root's lockfile
// names and the org's store holds is linked into the root's fresh npm cache at
// cacache's content path; the rest download as before. The link stays root-owned
// and read-only to the jail (openForJail leaves it alone, perms.ts).
//
// Back: after the job's steps, what the cache holds under a digest the root's own
// lockfile names (read from the stored tree, never from the copy the jail could
// write) is copied into the store through a hash: stored only when its sha512 is
// its name. A seeded entry npm did not keep (refused, or replaced) is hashed again,
// and dropped from the store when it no longer matches its name. Only sha512
// integrities are stored (npm's default since npm 5; an old sha1-only entry is fetched).
import { constants } from 'node:fs';
import { link, lstat, mkdir, open, readFile, readdir, unlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join, relative } from 'node:path';
import { MAX_LOCKFILE_BYTES } from './ecosystems.js';
import { hashFile, placeEntry, type PackageStore } from './package-store.js';

/** <deps>-relative dir of a root's references to the store's tarballs (links: a root holds what its lockfiles named). Daemon-only, never bound. */
export const PACKAGE_REFS_REL = 'package-refs';

const HEX512 = /^[0-9a-f]{128}$/;
/** cacache's content dir for sha512 under npm's cache dir (npm_config_cache + /_cacache). */
const CONTENT_REL = ['_cacache', 'content-v2', 'sha512'];

/** sha512 digests (hex) of every integrity a lockfile names: `packages` (v2, v3) and nested `dependencies` (v1). */
export async function lockIntegrities(lockFile: string): Promise<Set<string>> {
  const out = new Set<string>();
  const st = await lstat(lockFile).catch(() => undefined);
  if (!st?.isFile() || st.size > MAX_LOCKFILE_BYTES) return out;
  let lock: unknown;
  try {
    lock = JSON.parse(await readFile(lockFile, 'utf8'));
  } catch {
    return out; // npm ci reports a broken lockfile itself
  }
  const add = (entry: unknown) => {
    const integrity = (entry as { integrity?: unknown } | null)?.integrity;
    if (typeof integrity !== 'string') return;
    for (const part of integrity.trim().split(/\s+/)) {
      if (!part.startsWith('sha512-')) continue;
      const hex = Buffer.from(part.slice(7), 'base64').toString('hex');
      if (HEX512.test(hex)) out.add(hex);
    }
  };
  const l = lock as { packages?: unknown; dependencies?: unknown };
  if (l.packages && typeof l.packages === 'object') for (const e of Object.values(l.packages)) add(e);
  // v1: nested `dependencies`, walked without recursion (a lockfile is the tree's input).
  const stack = [l.dependencies];
  while (stack.length > 0) {
    const deps = stack.pop();
    if (!deps || typeof deps !== 'object') continue;
    for (const e of Object.values(deps)) {
      add(e);
      stack.push((e as { dependencies?: unknown } | null)?.dependencies);
    }
  }
  return out;
}

/** cacache's content path for a sha512 digest under npm's cache dir (npm_config_cache; cacache lives in its _cacache). */
export function cacheContentPath(cacheDir: string, hex: string): string {
  return join(cacheDir, ...CONTENT_REL, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

/** What one job's npm steps asked for and were given. */
export interface NpmJobState {
  /** Digests the root's lockfiles name. */
  wanted: Set<string>;
  /** Digests linked from the store into the cache, with the store inode linked. */
  seeded: Map<string, number>;
}

/** Link every tarball `wanted` names that the org's store holds into npm's cache dir. */
export async function seedTarballs(store: PackageStore, org: string, wanted: Iterable<string>, cacheDir: string, job: NpmJobState): Promise<void> {
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'npm');
    for (const hex of wanted) {
      job.wanted.add(hex);
      if (job.seeded.has(hex)) continue;
      const src = join(dir, hex);
      const st = await lstat(src).catch(() => undefined);
      if (!st?.isFile()) continue;
      const dest = cacheContentPath(cacheDir, hex);
      if (!(await realDirs(cacheDir, relative(cacheDir, dirname(dest)).split('/')))) continue;
      try {
        await link(src, dest);
        job.seeded.set(hex, st.ino);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // EEXIST: an earlier step of the job downloaded it; EMLINK/EXDEV: npm downloads it.
        if (code !== 'EEXIST' && code !== 'EMLINK' && code !== 'EXDEV') throw err;
      }
    }
  });
}

/**
 * After the job's steps, before its npm cache is removed: count what the store gave,
 * check what npm refused, take in what was downloaded, and link every stored tarball
 * the lockfiles named into <deps>/package-refs/npm/ (what keeps it in the store).
 */
export async function takeTarballs(store: PackageStore, org: string, cacheDir: string, depsDir: string, job: NpmJobState): Promise<void> {
  if (job.wanted.size === 0) return;
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'npm');
    let hits = 0;
    // Seeded entries npm did not keep as they were: the store's copy is checked again.
    for (const [hex, ino] of job.seeded) {
      const now = await lstat(cacheContentPath(cacheDir, hex)).catch(() => undefined);
      if (now?.ino === ino) {
        hits++;
        continue;
      }
      const src = join(dir, hex);
      const st = await lstat(src).catch(() => undefined);
      if (!st || st.ino !== ino) continue;
      if ((await hashFile(src, 'sha512').catch(() => '')) === hex) continue;
      store.warn({ org, integrity: hex.slice(0, 16) }, 'package store: a tarball no longer matches its digest; dropped');
      await unlink(src).catch(() => undefined);
      store.dropped(org, 'npm', st.ino, st.blocks);
    }
    store.hit(org, 'npm', hits);
    for (const hex of await cachedDigests(cacheDir)) {
      if (!job.wanted.has(hex)) continue; // not what this root's lockfiles name: never stored
      const dest = join(dir, hex);
      if (await lstat(dest).catch(() => undefined)) continue;
      await copyVerified(store, org, cacheContentPath(cacheDir, hex), dir, dest, hex);
    }
    const refs = join(depsDir, PACKAGE_REFS_REL, 'npm');
    await mkdir(refs, { recursive: true, mode: 0o700 });
    for (const hex of job.wanted) {
      await link(join(dir, hex), join(refs, hex)).catch((err: NodeJS.ErrnoException) => {
        if (!['ENOENT', 'EEXIST', 'EMLINK', 'EXDEV'].includes(err.code ?? '')) throw err;
      });
    }
  });
}

/**
 * The sha512 digests (hex) of regular files under npm's cache content dir. A jail
 * wrote that tree (an earlier step's, now exited): no link in it is followed, or the
 * daemon would read (here) or create (realDirs) wherever one points on the host.
 */
async function cachedDigests(cacheDir: string): Promise<string[]> {
  const out: string[] = [];
  let p = cacheDir;
  for (const seg of CONTENT_REL) {
    p = join(p, seg);
    if (!(await lstat(p).catch(() => undefined))?.isDirectory()) return out;
  }
  const dirs = async (d: string) => (await readdir(d, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => e.name);
  for (const a of await dirs(p)) {
    for (const b of await dirs(join(p, a))) {
      for (const e of await readdir(join(p, a, b), { withFileTypes: true }).catch(() => [])) {
        const hex = a + b + e.name;
        if (e.isFile() && HEX512.test(hex)) out.push(hex);
      }
    }
  }
  return out;
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

/**
 * Copy a jail-written file into the store through sha512: the daemon's own inode
 * (root-owned, 0644), placed only when the bytes are `hex`. A copy, not a link: the
 * cached file is the jail uid's, and a later jail of that uid must never own a store inode.
 */
async function copyVerified(store: PackageStore, org: string, from: string, dir: string, dest: string, hex: string): Promise<void> {
  const tmp = store.tempName(dir);
  let src;
  try {
    src = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return;
  }
  const out = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  let ok = false;
  try {
    if (!(await src.stat()).isFile()) return;
    const h = createHash('sha512');
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (;;) {
      const { bytesRead } = await src.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
      await out.write(buf, 0, bytesRead);
    }
    ok = h.digest('hex') === hex;
    if (ok) await out.chmod(0o644);
  } finally {
    await src.close();
    await out.close();
    if (!ok) await unlink(tmp).catch(() => undefined);
  }
  if (!ok) {
    store.warn({ org, integrity: hex.slice(0, 16) }, 'package store: a cached tarball does not match its digest; not stored');
    return;
  }
  if (await placeEntry(tmp, dest)) {
    const st = await lstat(dest);
    store.added(org, 'npm', st.ino, st.blocks);
  }
}

/** A root that links an earlier root's workspaces holds that root's tarballs too (they outlive it while we stand). */
export async function linkTarballRefs(fromDeps: string, toDeps: string): Promise<void> {
  const from = join(fromDeps, PACKAGE_REFS_REL, 'npm');
  const names = (await readdir(from).catch(() => [] as string[])).filter((n) => HEX512.test(n));
  if (names.length === 0) return;
  const to = join(toDeps, PACKAGE_REFS_REL, 'npm');
  await mkdir(to, { recursive: true, mode: 0o700 });
  for (const n of names) {
    await link(join(from, n), join(to, n)).catch((err: NodeJS.ErrnoException) => {
      if (!['ENOENT', 'EEXIST', 'EMLINK', 'EXDEV'].includes(err.code ?? '')) throw err;
    });
  }
}
