// Composer dists in the org's package store (package-store.ts), by the sha1 the
// lock gives as `dist.shasum`: a lock that changes one package downloads one dist.
//
// In: composer (2.5, FileDownloader::download) reads a dist from its files cache,
// with no request, at <COMPOSER_CACHE_DIR>/files/<name>/<sha1 of the URL>.<type> for
// the first URL it tries (a preferred mirror's, then the lock's), and only when the
// cached file's sha1 equals the lock's shasum; else it downloads. So before the step
// each dist the root's lock names that the store holds is checked again (sha1; a
// tampered entry leaves the store) and linked at the cache path of each of its URLs.
// It must be checked here, not left to composer: after a download composer copies
// the file over its cache path, and a root-owned link there would fail that copy.
// Back: after the job, each file composer cached (jail-written) is copied in through
// sha1, stored only when the digest is a shasum the root's lock names, as
// composer/<sha1>.
//
// Not stored, so downloaded by every root: dists whose lock has no shasum (most
// GitHub zipballs: Packagist leaves it empty, and nothing else in the lock says what
// their bytes must be, so the daemon could not verify a copy), and dists whose URL
// composer rewrites before use (GitHub, GitLab, Bitbucket archive URLs: their cache
// path is not computed here; a mirror's, tried first, is). The files of every dist
// are shared on disk regardless (file-dedupe.ts). sha1 is what composer itself checks.
import { createHash } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PackageStore } from './package-store.js';
import { copyVerified, entryIntact, holdEntries, linkOrSkip, realDirs } from './store-entries.js';

export type LockJson = Record<string, unknown>;

/** A dist of the lock composer would verify, and where in its cache it looks for it. */
export interface LockedDist {
  shasum: string;
  /** COMPOSER_CACHE_DIR-relative paths, one per URL composer may try. */
  cacheRels: string[];
}

export interface DistJobState {
  /** shasums the root's locks name. */
  wanted: Set<string>;
}

const SHA1 = /^[0-9a-f]{40}$/;
/** Composer's package names (its JSON schema's pattern), lowercased as composer keys its cache. */
const PACKAGE = /^[a-z0-9]([_.-]?[a-z0-9]+)*\/[a-z0-9](([_.]|-{1,2})?[a-z0-9]+)*$/;
/** Hosts whose archive URLs composer rewrites with the reference (Composer\Util\Url::updateDistReference). */
const REWRITTEN = new Set(['github.com', 'www.github.com', 'api.github.com', 'bitbucket.org', 'www.bitbucket.org', 'gitlab.com', 'www.gitlab.com']);

const isObject = (v: unknown): v is LockJson => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The dists of `lock` (the lock the daemon wrote for composer, composer.ts
 * sanitizeLock: its dists and mirrors are what composer sees) with a shasum, and
 * their cache paths.
 */
export function lockedDists(lock: LockJson): LockedDist[] {
  const out: LockedDist[] = [];
  for (const key of ['packages', 'packages-dev']) {
    const list = lock[key];
    if (!Array.isArray(list)) continue;
    for (const p of list as unknown[]) {
      if (!isObject(p) || !isObject(p.dist) || typeof p.name !== 'string') continue;
      const { shasum, type, url, reference, mirrors } = p.dist;
      const name = p.name.toLowerCase();
      if (typeof shasum !== 'string' || !SHA1.test(shasum) || (type !== 'zip' && type !== 'tar') || typeof url !== 'string' || !PACKAGE.test(name)) continue;
      const ref = typeof reference === 'string' ? reference : '';
      // Package::getUrls: the lock's URL, a preferred mirror before it, another after.
      const urls = [url];
      for (const m of Array.isArray(mirrors) ? (mirrors as unknown[]) : []) {
        if (!isObject(m) || typeof m.url !== 'string') continue;
        const u = mirrorUrl(m.url, name, ref, type);
        if (!urls.includes(u)) (m.preferred ? urls.unshift : urls.push).call(urls, u);
      }
      const cacheRels = urls.flatMap((u) => {
        if (u.includes('%') || rewritten(u)) return [];
        const key = `${name}/${createHash('sha1').update(u).digest('hex')}.${type}`;
        return [`files/${key.replace(/[^a-z0-9_./]/gi, '-')}`];
      });
      if (cacheRels.length > 0) out.push({ shasum, cacheRels });
    }
  }
  return out;
}

/** ComposerMirror::processUrl for the placeholders lspd's mirror uses (%package%, %reference%, %type%). */
function mirrorUrl(template: string, name: string, ref: string, type: string): string {
  const reference = /^[a-f0-9]*$/.test(ref) ? ref : createHash('md5').update(ref).digest('hex');
  return template.replaceAll('%package%', name).replaceAll('%reference%', reference).replaceAll('%type%', type);
}

function rewritten(url: string): boolean {
  try {
    return REWRITTEN.has(new URL(url).hostname);
  } catch {
    return true;
  }
}

/** Link every dist in `dists` that the org's store holds (checked first) at its paths in composer's cache dir. */
export async function seedDists(store: PackageStore, org: string, dists: LockedDist[], cacheDir: string, job: DistJobState): Promise<void> {
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'composer');
    let hits = 0;
    for (const d of dists) {
      job.wanted.add(d.shasum);
      const src = join(dir, d.shasum);
      if (!(await lstat(src).catch(() => undefined))) continue;
      if (!(await entryIntact(store, org, 'composer', src, 'sha1', d.shasum))) continue;
      let linked = false;
      for (const rel of d.cacheRels) {
        if (!(await realDirs(cacheDir, dirname(rel).split('/')))) continue;
        if (await linkOrSkip(src, join(cacheDir, rel))) linked = true;
      }
      if (linked) hits++;
    }
    store.hit(org, 'composer', hits);
  });
}

/**
 * After the job's steps, before composer's cache is removed: take in what composer
 * downloaded (checked by digest against the root's locks), and hold every stored dist
 * they name by a link under <deps>/package-refs/composer/.
 */
export async function takeDists(store: PackageStore, org: string, cacheDir: string, depsDir: string, job: DistJobState): Promise<void> {
  if (job.wanted.size === 0) return;
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'composer');
    const have = new Set(await readdir(dir));
    for (const file of await cachedFiles(join(cacheDir, 'files'))) {
      const hex = await copyVerified(store, org, 'composer', file, dir, 'sha1', (h) => (job.wanted.has(h) && !have.has(h) ? h : undefined));
      if (hex !== undefined) have.add(hex);
    }
    await holdEntries(
      dir,
      [...job.wanted].filter((h) => have.has(h)),
      depsDir,
      'composer',
    );
  });
}

/**
 * Files at files/<vendor>/<name>/<file> of composer's cache, which a jail wrote: dirs
 * entered only when lstat says so, links never followed; the store's own links the
 * seed made (root's, more than one name) left out.
 */
async function cachedFiles(top: string): Promise<string[]> {
  const out: string[] = [];
  const dirs = async (d: string) => (await readdir(d, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => join(d, e.name));
  if (!(await lstat(top).catch(() => undefined))?.isDirectory()) return out;
  for (const vendor of await dirs(top)) {
    for (const pkg of await dirs(vendor)) {
      for (const e of await readdir(pkg, { withFileTypes: true }).catch(() => [])) {
        if (!e.isFile()) continue;
        const st = await lstat(join(pkg, e.name)).catch(() => undefined);
        if (st && !(st.uid === 0 && st.nlink > 1)) out.push(join(pkg, e.name));
      }
    }
  }
  return out;
}
