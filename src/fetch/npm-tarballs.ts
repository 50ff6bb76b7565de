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
import { link, lstat, readFile, readdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { MAX_LOCKFILE_BYTES } from './ecosystems.js';
import type { PackageStore } from './package-store.js';
import { copyVerified, entryIntact, holdEntries, realDirs } from './store-entries.js';

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
      if ((await lstat(src).catch(() => undefined))?.ino === ino) await entryIntact(store, org, 'npm', src, 'sha512', hex);
    }
    store.hit(org, 'npm', hits);
    for (const hex of await cachedDigests(cacheDir)) {
      if (!job.wanted.has(hex)) continue; // not what this root's lockfiles name: never stored
      const dest = join(dir, hex);
      if (await lstat(dest).catch(() => undefined)) continue;
      const got = await copyVerified(store, org, 'npm', cacheContentPath(cacheDir, hex), dir, 'sha512', (h) => (h === hex ? hex : undefined));
      if (got !== undefined && got !== hex)
        store.warn({ org, integrity: hex.slice(0, 16) }, 'package store: a cached tarball does not match its digest; not stored');
    }
    await holdEntries(dir, job.wanted, depsDir, 'npm');
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
