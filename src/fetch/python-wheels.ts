// Wheels in the org's package store (package-store.ts), by sha256: a lock that
// changes one package downloads one wheel.
//
// Which: pip-driver.py passes the lock's hashes to pip (`--hash`, `--require-hashes`),
// so pip accepts a wheel, from wherever, only when its sha256 is one the lock names.
// The daemon reads the same hashes from the root's stored tree (never from what a
// jail wrote): every `sha256:<hex>` the workspace's lock (uv.lock, poetry.lock,
// Pipfile.lock, else requirements*.txt and the files they include with -r) names.
// Reading the text for that pattern rather than parsing each format is enough: an
// entry is stored and given out only by those bytes' digest, so a hash the lock
// names for anything else matches nothing.
//
// In: before the pip step, each wanted wheel the store holds is checked again
// (sha256; a tampered entry leaves the store and is downloaded), linked into
// <deps>/python-store/ under its file name, and named with its digest in
// lspd-sha256.txt there; the dir is root's, bound read-only. The driver installs the
// hashed requirements from local dirs only (`pip install --no-index --find-links`),
// after `pip download`ing into <deps>/python-tmp/wheels/ just those the store did not
// give; pip checks every hash again whatever the source.
// Back: after the job, each wheel in python-tmp/wheels/ (jail-written) is copied in
// through sha256, stored only when the digest is one the root's lock names, as
// python/<sha256>-<file name> (the name is what pip needs to read a wheel's tags).
// Requirements without hashes are installed from the index as before, never stored.
import { lstat, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { MAX_LOCKFILE_BYTES, isPlainDir } from './ecosystems.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';
import type { PackageStore } from './package-store.js';
import { copyVerified, entryIntact, holdEntries, linkOrSkip } from './store-entries.js';

/** The digests of what python-store/ holds, one `<sha256 hex> <file name>` a line (read by pip-driver.py). */
export const WHEEL_MANIFEST = 'lspd-sha256.txt';
/** Under the job's python tmp dir: where the driver downloads wheels (what is taken into the store after the job). */
export const WHEELS_OUT = 'wheels';

const LOCKS = ['uv.lock', 'poetry.lock', 'Pipfile.lock'];
const REQUIREMENTS = /^requirements[\w.-]*\.txt$/;
const SHA256 = /sha256:([0-9a-fA-F]{64})\b/g;
const INCLUDE = /^\s*(?:-r|--requirement)(?:\s+|\s*=\s*)(\S+)/gm;
/** pip's wheel file names (name-version[-build]-python-abi-platform.whl); nothing else is taken in. */
const WHEEL = /^[A-Za-z0-9_.+!]+(?:-[A-Za-z0-9_.+!]+){4,5}\.whl$/;
const ENTRY = /^([0-9a-f]{64})-(.+)$/;
const MAX_FILES = 32;
const MAX_INCLUDE_DEPTH = 5;

/** What one job's Python steps asked for and were given. */
export interface WheelJobState {
  /** sha256 digests the root's locks name. */
  wanted: Set<string>;
}

/**
 * Every sha256 the lock of tree dir `ws` names, as the driver picks that lock: the
 * first of uv.lock, poetry.lock, Pipfile.lock, else every requirements*.txt and the
 * tree files they include (-r), through no link, each under the lockfile bound.
 */
export async function lockSha256s(treeDir: string, ws: string): Promise<Set<string>> {
  const out = new Set<string>();
  const dir = join(treeDir, ws);
  if (!(await isPlainDir(treeDir, ws))) return out;
  const names = (await readdir(dir).catch(() => [] as string[])).sort();
  const lock = LOCKS.find((l) => names.includes(l));
  const queue: [string, number][] = lock ? [[join(dir, lock), 0]] : names.filter((n) => REQUIREMENTS.test(n)).map((n) => [join(dir, n), 0]);
  const seen = new Set<string>();
  while (queue.length > 0 && seen.size < MAX_FILES) {
    const [file, depth] = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = await readBounded(treeDir, file);
    if (text === undefined) continue;
    // Up to MAX_LOCKFILE_BYTES a file: the scan hands the event loop back between slices.
    const turn = turnCounter();
    for (const m of text.matchAll(SHA256)) {
      out.add(m[1]!.toLowerCase());
      if (turn(m[0].length)) await nextTurn();
    }
    if (lock || depth >= MAX_INCLUDE_DEPTH) continue;
    for (const m of text.matchAll(INCLUDE)) queue.push([join(dirname(file), m[1]!), depth + 1]);
  }
  return out;
}

/** A tree file's text, when it is a regular file inside the tree reached through no link and within the bound. */
async function readBounded(treeDir: string, file: string): Promise<string | undefined> {
  const rel = relative(treeDir, file);
  if (rel.startsWith('..') || rel === '' || !(await isPlainDir(treeDir, dirname(rel) === '.' ? '' : dirname(rel)))) return undefined;
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.size > MAX_LOCKFILE_BYTES) return undefined;
  return readFile(file, 'utf8').catch(() => undefined);
}

/** The org's stored wheels by digest: entry name (`<hex>-<file>`) and the wheel's file name. */
async function storedWheels(dir: string): Promise<Map<string, { entry: string; file: string }>> {
  const out = new Map<string, { entry: string; file: string }>();
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    const m = ENTRY.exec(entry);
    if (m && WHEEL.test(m[2]!) && !out.has(m[1]!)) out.set(m[1]!, { entry, file: m[2]! });
  }
  return out;
}

/**
 * Before a pip step: every wheel `wanted` names that the org's store holds, checked
 * and linked into `inDir` (made here, root's), with the manifest the driver reads.
 */
export async function seedWheels(store: PackageStore, org: string, wanted: Iterable<string>, inDir: string, job: WheelJobState): Promise<void> {
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'python');
    const have = await storedWheels(dir);
    await mkdir(inDir, { recursive: true, mode: 0o755 });
    const given = new Map<string, string>();
    for (const line of (await readFile(join(inDir, WHEEL_MANIFEST), 'utf8').catch(() => '')).split('\n')) {
      const [hex, file] = line.split(' ');
      if (hex && file) given.set(hex, file);
    }
    let hits = 0;
    for (const hex of wanted) {
      job.wanted.add(hex);
      const w = have.get(hex);
      if (!w || given.has(hex) || [...given.values()].includes(w.file)) continue;
      if (!(await entryIntact(store, org, 'python', join(dir, w.entry), 'sha256', hex))) continue;
      if (!(await linkOrSkip(join(dir, w.entry), join(inDir, w.file)))) continue;
      given.set(hex, w.file);
      hits++;
    }
    await writeFile(join(inDir, WHEEL_MANIFEST), [...given].map(([hex, file]) => `${hex} ${file}\n`).join(''), { mode: 0o644 });
    store.hit(org, 'python', hits);
  });
}

/**
 * After the job's steps, before its python tmp dir is removed: take in what the driver
 * downloaded into `outDir` (checked by digest against the root's locks), and hold every
 * stored wheel they name by a link under <deps>/package-refs/python/.
 */
export async function takeWheels(store: PackageStore, org: string, outDir: string, depsDir: string, job: WheelJobState): Promise<void> {
  if (job.wanted.size === 0) return;
  await store.inTurn(org, async () => {
    const dir = await store.dirOf(org, 'python');
    // Written by a jail: entered only when it is a real dir, files never through a link (copyVerified opens O_NOFOLLOW).
    const files = (await lstat(outDir).catch(() => undefined))?.isDirectory() ? await readdir(outDir, { withFileTypes: true }) : [];
    const have = await storedWheels(dir);
    for (const f of files) {
      if (!f.isFile() || !WHEEL.test(f.name)) continue;
      const hex = await copyVerified(store, org, 'python', join(outDir, f.name), dir, 'sha256', (h) =>
        job.wanted.has(h) && !have.has(h) ? `${h}-${f.name}` : undefined,
      );
      if (hex !== undefined && !job.wanted.has(hex))
        store.warn({ org, wheel: f.name.slice(0, 120) }, 'package store: a wheel the lock does not name; not stored');
    }
    const now = await storedWheels(dir);
    await holdEntries(
      dir,
      [...job.wanted].flatMap((hex) => now.get(hex)?.entry ?? []),
      depsDir,
      'python',
    );
  });
}
