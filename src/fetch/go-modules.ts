// Go modules in the org's package store (package-store.ts), by the go.sum hash they
// were verified against, so a second root whose go.sum names modules the org holds
// fetches none of them, and a go.sum that changes one module downloads one.
//
// What is stored: Go's own download-cache files, the ones `go mod download` writes
// under GOMODCACHE/cache/download/<module>/@v/ (module and version escaped: an
// upper-case letter is '!' and the letter):
//   <h1 hex>.<sha256 hex>.zip  the module zip, by the h1 of go.sum's "<mod> <ver> h1:"
//                              line and the sha256 of its bytes
//   <h1 hex>.mod               its go.mod, by the h1 of the "<mod> <ver>/go.mod h1:" line
//   <sha256 of mod@ver>.info   the version's info ({"Version": …}: go.sum has no hash of it)
//
// In, before the Go step (seed): what the tree's go.sum names and the store holds is
// linked into the job's fresh GOMODCACHE, root-owned and read-only to the jail
// (openForJail leaves it alone). Why the download cache and not a file:// GOPROXY:
// the same files, with no bind, no proxy list to get right, and the job's cache then
// holds each module by a link to its store entry, which is what keeps the entry
// (package-refs are for caches that are removed; this one is the output). Go still
// checks each one: a zip laid in without its .ziphash is hashed by Go and compared
// with the tree's go.sum before it is extracted (modfetch.downloadZip, Go 1.24), a
// cached .mod is compared with go.sum when read (readDiskGoMod). So the tree's go.sum
// stays the law, and a store entry that does not match it is never extracted. But Go
// fails the whole fetch on such a mismatch instead of downloading, so the daemon
// checks first, and cheaply: a zip's bytes against the sha256 in its name (taken when
// it was verified), a .mod against its h1, an .info's version. An entry that fails is
// dropped from the store and Go downloads the module.
//
// Back, after the steps, once the output is sealed (root-owned, no jail running):
// each file the wanted entries name in the job's cache that is not a store link is
// taken in by linking it (sealed, the inode is the daemon's) when the daemon's own
// hash equals the root's go.sum line, read from the stored tree at seed time, never
// from what the jail wrote: for a zip, Hash1 computed here (go-zip-worker.js, yauzl)
// the way Go's dirhash.HashZip does; for a .mod, its h1. Go verified it on the way in
// too; this check is what makes an entry safe to give a later fetch (Go would refuse
// a bad one and fail it). Never across orgs: each org's go/ dir holds only what its
// own fetches brought and its own go.sum files named.
import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { link, lstat, open, readFile, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_LOCKFILE_BYTES } from './ecosystems.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';
import { hashFile, runWorker, type PackageStore } from './package-store.js';
import { realDirs } from './store-entries.js';

/** One module version as the tree's go.sum names it: its zip's h1 and its go.mod's h1, in hex. */
export interface GoSumEntry {
  mod: string;
  ver: string;
  zip?: string;
  gomod?: string;
}

/** What one job's Go steps were told they may be given, and were given. */
export interface GoJobState {
  /** By "mod@ver": every entry of the tree's go.sum files the job's steps read. */
  wanted: Map<string, GoSumEntry>;
  /** Cache-relative path → the store inode linked there. */
  seeded: Map<string, number>;
}

/** Go's limits: modzip.MaxZipFile and codehost.MaxGoMod; an .info is a few hundred bytes. */
const MAX_ZIP = 500 << 20;
const MAX_MOD = 16 << 20;
const MAX_INFO = 1 << 20;

/** A module path element (golang.org/x/mod/module: letters, digits, "-._~", no dot at either end) and a version with no '/'. */
const ELEM = /^[A-Za-z0-9_~-](?:[A-Za-z0-9._~-]*[A-Za-z0-9_~-])?$/;
const VERSION = /^v[0-9A-Za-z.+-]+$/;
const H1 = /^h1:([A-Za-z0-9+/]{43}=)$/;
const ZIP_NAME = /^([0-9a-f]{64})\.([0-9a-f]{64})\.zip$/;

/** Every well-formed line of go.sum text; a line Go would not write (a path with "..", an odd hash) is left out, never guessed. */
export async function parseGoSum(text: string): Promise<GoSumEntry[]> {
  const byKey = new Map<string, GoSumEntry>();
  // A tree's go.sum may be up to MAX_LOCKFILE_BYTES: the loop hands the event loop back between slices.
  const turn = turnCounter();
  for (let start = 0; start < text.length;) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    addGoSumLine(byKey, text.slice(start, end));
    if (turn(end - start)) await nextTurn();
    start = end + 1;
  }
  return [...byKey.values()];
}

function addGoSumLine(byKey: Map<string, GoSumEntry>, line: string): void {
  const f = line.trim().split(/\s+/);
  if (f.length !== 3) return;
  const [mod, rawVer, hash] = f as [string, string, string];
  const isMod = rawVer.endsWith('/go.mod');
  const ver = isMod ? rawVer.slice(0, -'/go.mod'.length) : rawVer;
  const h = H1.exec(hash);
  if (!h || !VERSION.test(ver) || !mod.split('/').every((e) => ELEM.test(e))) return;
  const key = `${mod}@${ver}`;
  const e = byKey.get(key) ?? { mod, ver };
  e[isMod ? 'gomod' : 'zip'] = Buffer.from(h[1]!, 'base64').toString('hex');
  byKey.set(key, e);
}

/** The entries of a go.sum in the stored tree (a regular file within the lockfile bound; anything else names nothing). */
export async function goSumEntries(goSum: string): Promise<GoSumEntry[]> {
  const st = await lstat(goSum).catch(() => undefined);
  if (!st?.isFile() || st.size > MAX_LOCKFILE_BYTES) return [];
  return parseGoSum(await readFile(goSum, 'utf8'));
}

/** module.EscapePath / EscapeVersion: an upper-case letter is '!' and the letter (case-insensitive file systems). */
const escape = (s: string) => s.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);

/** GOMODCACHE-relative path of a download-cache file of `e`. */
export function cacheRel(e: GoSumEntry, ext: 'zip' | 'mod' | 'info'): string {
  return `cache/download/${escape(e.mod)}/@v/${escape(e.ver)}.${ext}`;
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
/** go.sum's "/go.mod h1:" (dirhash over the one file "go.mod"), in hex. */
export const goModH1 = (data: Buffer) =>
  createHash('sha256')
    .update(`${sha256(data)}  go.mod\n`)
    .digest('hex');
const infoName = (e: GoSumEntry) => `${sha256(`${e.mod}@${e.ver}`)}.info`;

/** A checker of an .mod or .info's bytes for entry `e` (the zip is checked by the hashing thread). */
function smallFileOk(kind: 'mod' | 'info', e: GoSumEntry, data: Buffer): boolean {
  if (kind === 'mod') return e.gomod !== undefined && goModH1(data) === e.gomod;
  try {
    const info = JSON.parse(data.toString('utf8')) as { Version?: unknown } | null;
    return info?.Version === e.ver;
  } catch {
    return false;
  }
}

/** A regular file's bytes, read without following a link, or undefined (not there, not a file, above `max`). */
async function readSmall(path: string, max: number): Promise<Buffer | undefined> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!fh) return undefined;
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > max) return undefined;
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** [sha256 hex, h1 hex | null] per path (null: unreadable), from the hashing thread. */
export function hashZips(paths: string[]): Promise<([string, string | null] | null)[]> {
  if (paths.length === 0) return Promise.resolve([]);
  return runWorker(new URL('./go-zip-worker.js', import.meta.url), { paths });
}

/**
 * Before a Go step: link every download-cache file the tree's go.sum `goSum` names
 * and the org's store holds (checked first; see the header) into `modcache`.
 */
export async function seedGoModules(store: PackageStore, org: string, goSum: string, modcache: string, job: GoJobState): Promise<void> {
  const entries = await goSumEntries(goSum);
  for (const e of entries) job.wanted.set(`${e.mod}@${e.ver}`, { ...job.wanted.get(`${e.mod}@${e.ver}`), ...e });
  if (entries.length === 0) return;
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'go');
    const zips = zipsByH1(await readdir(dir));
    const made = new Map<string, boolean>(); // dirs made or found real, by cache-relative path
    const give = async (src: string, rel: string) => {
      const st = await lstat(src).catch(() => undefined);
      if (!st?.isFile()) return;
      const at = rel.slice(0, rel.lastIndexOf('/'));
      if (!made.has(at)) made.set(at, await realDirs(modcache, at.split('/')));
      if (!made.get(at)) return;
      try {
        await link(src, join(modcache, rel));
        job.seeded.set(rel, st.ino);
      } catch (err) {
        // EEXIST: an earlier Go step of the job fetched it; EMLINK/EXDEV: Go downloads it.
        if (!['EEXIST', 'EMLINK', 'EXDEV'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      }
    };
    const drop = async (path: string, why: string) => {
      const st = await lstat(path).catch(() => undefined);
      if (!st?.isFile()) return;
      store.warn({ org, entry: path.slice(dir.length + 1, dir.length + 17) }, `package store: a Go module ${why}; dropped`);
      await unlink(path).catch(() => undefined);
      store.dropped(org, 'go', st.ino, st.blocks);
    };
    const zipped: { e: GoSumEntry; name: string }[] = [];
    for (const e of entries) {
      if (e.zip && zips.has(e.zip) && !job.seeded.has(cacheRel(e, 'zip'))) zipped.push({ e, name: zips.get(e.zip)! });
      for (const [kind, name] of [
        ['mod', e.gomod && `${e.gomod}.mod`],
        ['info', infoName(e)],
      ] as const) {
        if (!name || job.seeded.has(cacheRel(e, kind))) continue;
        const data = await readSmall(join(dir, name), kind === 'mod' ? MAX_MOD : MAX_INFO);
        if (!data) continue;
        if (smallFileOk(kind, e, data)) await give(join(dir, name), cacheRel(e, kind));
        else await drop(join(dir, name), `${kind} file no longer matches its name`);
      }
    }
    // On this thread, as npm's tarballs are: a sha256 per zip is cheap beside starting one.
    for (const { e, name } of zipped) {
      const sha = await hashFile(join(dir, name), 'sha256').catch(() => '');
      if (sha === ZIP_NAME.exec(name)![2]) await give(join(dir, name), cacheRel(e, 'zip'));
      else await drop(join(dir, name), 'zip no longer matches the digest it was stored under');
    }
  });
}

/**
 * After the steps, once the output is sealed and within its bound: count what the
 * store gave, and take in what Go downloaded that the daemon verifies against the
 * root's go.sum (see the header). The taken files stay the root's too: one inode.
 */
export async function takeGoModules(store: PackageStore, org: string, modcache: string, job: GoJobState): Promise<void> {
  if (job.wanted.size === 0) return;
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'go');
    const zips = zipsByH1(await readdir(dir));
    const dirsOk = new Map<string, boolean>();
    let hits = 0;
    const fresh: { e: GoSumEntry; path: string }[] = [];
    const keep = async (from: string, name: string) => {
      const dest = join(dir, name);
      try {
        await link(from, dest);
      } catch (err) {
        if (['EEXIST', 'EMLINK', 'EXDEV', 'ENOENT'].includes((err as NodeJS.ErrnoException).code ?? '')) return;
        throw err;
      }
      const st = await lstat(dest);
      store.added(org, 'go', st.ino, st.blocks);
    };
    for (const e of job.wanted.values()) {
      for (const kind of ['zip', 'mod', 'info'] as const) {
        const rel = cacheRel(e, kind);
        const st = await sealedFile(modcache, rel, dirsOk);
        if (!st) continue;
        if (job.seeded.get(rel) === st.ino) {
          hits++;
          continue;
        }
        // Only a file the job's jail wrote alone and the seal made the daemon's.
        if (st.nlink !== 1 || st.uid !== 0 || st.size === 0) continue;
        const path = join(modcache, rel);
        if (kind === 'zip') {
          if (e.zip && !zips.has(e.zip) && st.size <= MAX_ZIP) fresh.push({ e, path });
          continue;
        }
        const name = kind === 'mod' ? `${e.gomod}.mod` : infoName(e);
        if (kind === 'mod' && !e.gomod) continue;
        if (await lstat(join(dir, name)).catch(() => undefined)) continue;
        const data = await readSmall(path, kind === 'mod' ? MAX_MOD : MAX_INFO);
        if (data && smallFileOk(kind, e, data)) await keep(path, name);
      }
    }
    store.hit(org, 'go', hits);
    const sums = await hashZips(fresh.map((f) => f.path));
    for (const [i, { e, path }] of fresh.entries()) {
      const [sha, h1] = sums[i] ?? [];
      if (!sha || !h1 || h1 !== e.zip) {
        store.warn({ org, module: `${e.mod}@${e.ver}` }, "package store: a Go module zip does not match the tree's go.sum here; not stored");
        continue;
      }
      if (zips.has(h1)) continue;
      await keep(path, `${h1}.${sha}.zip`);
      zips.set(h1, `${h1}.${sha}.zip`);
    }
  });
}

/** The store's zips by their h1 hex (one name each: a second zip of the same h1 is never taken in). */
function zipsByH1(names: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of names) {
    const m = ZIP_NAME.exec(n);
    if (m) out.set(m[1]!, n);
  }
  return out;
}

/** lstat of base/rel when every dir on the way is a real directory (no link a jail left is followed); checked dirs remembered. */
async function sealedFile(base: string, rel: string, dirsOk: Map<string, boolean>): Promise<Stats | undefined> {
  const segs = rel.split('/');
  let p = base;
  for (const seg of segs.slice(0, -1)) {
    p = join(p, seg);
    let ok = dirsOk.get(p);
    if (ok === undefined) {
      ok = (await lstat(p).catch(() => undefined))?.isDirectory() ?? false;
      dirsOk.set(p, ok);
    }
    if (!ok) return undefined;
  }
  const st = await lstat(join(base, rel)).catch(() => undefined);
  return st?.isFile() ? st : undefined;
}
