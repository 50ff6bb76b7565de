// The package store: one per org, content-addressed, under <data>/fetch-store/<org>/,
// so N commits of a repo cost about one copy of their dependencies on disk and a
// lockfile that changes one package downloads one package (the way pnpm's store
// does):
//
//   npm/<sha512 hex>         npm tarballs, by the lockfile integrity they were verified
//                            against (npm-tarballs.ts: laid into a fetch's npm cache as
//                            links before `npm ci`, taken in from it after)
//   python/<sha256 hex>-<wheel file name>
//                            wheels, by a sha256 the lock names (python-wheels.ts)
//   composer/<sha1 hex>      composer dists, by the lock's dist.shasum (composer-dists.ts)
//   files/<2 hex>/<sha256 hex>[x]
//                            files of every fetched output dir by content (x: executable),
//                            each root's copy replaced by a link to it (file-dedupe.ts)
//   go/<h1 hex>.<sha256 hex>.zip, go/<h1 hex>.mod, go/<sha256 hex of module@version>.info
//                            Go's download-cache files, by the go.sum hash they were
//                            verified against (go-modules.ts: laid into a fetch's
//                            GOMODCACHE before `go mod download`, taken in from it after)
//
// Rules (LLM.md "Package store"):
// - Never across orgs: an org's fetch reads only its own store, which holds only
//   what its own fetches brought, verified (a tarball's sha512 is its name and an
//   integrity the root's own lockfile names; a file's sha256 is computed by the
//   daemon from the sealed copy).
// - Store inodes are root-owned, 0644 (0755 when executable), and never written: a
//   jail sees one only as a link in a read-only SERVE bind, or in its npm cache
//   dir, where `openForJail` leaves root-owned files with other links alone
//   (perms.ts); the store dir itself is 0700 and bound nowhere.
// - References are links: a root holds each store file it uses by a name in its
//   deps dir (node_modules files themselves; archives under <deps>/package-refs/<kind>/),
//   so a store entry whose link count is 1 is used by no root and `sweep` removes it
//   (after a root's files are gone: RootStore calls `release`). Crash-safe: nothing
//   to keep in step but the filesystem.
// - Charged once, to the org: RootStore adds `bytes(org)` to the org's disk and
//   charges a root's deps dir nothing for an inode the org's store `holds`; the
//   eviction policy counts it as the org's and never picks it (it shrinks as the
//   roots that use it go).
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { NAME_RE } from '../api/schemas.js';

/** The kinds, each a dir of the org's store; `files` last: the worker's scan counts whatever is under no other kind's dir as files. */
const KINDS = ['npm', 'python', 'composer', 'go', 'files'] as const;
export type StoreKind = (typeof KINDS)[number];
const zeroes = (): Record<StoreKind, number> => ({ npm: 0, python: 0, composer: 0, go: 0, files: 0 });

interface OrgState {
  /** Blocks of the entries (files), kept as they come and go. */
  bytes: Record<StoreKind, number>;
  /** Blocks of the store's own directories (the org's, one per kind, files/'s 256 fan-out dirs), measured after each turn. */
  dirBytes: Record<StoreKind, number>;
  /** Inode numbers of the store's files (all on the store's device): a root is not charged for these. */
  inodes: Set<number>;
  /** Tail of the org's store operations: a sweep never runs beside a fetch taking links. */
  turn: Promise<unknown>;
  sweepAgain: boolean;
  sweeping?: Promise<void>;
}

export interface PackageStoreOptions {
  /** <data>/fetch-store */
  dir: string;
  log: Logger;
  metrics: Pick<Metrics, 'fetchStoreBytes' | 'fetchStoreHits' | 'fetchStoreMisses' | 'orgLabels'>;
}

export class PackageStore {
  private readonly orgs = new Map<string, OrgState>();
  private readonly gaugeLabels = Object.fromEntries(KINDS.map((k) => [k, new Set<string>()])) as Record<StoreKind, Set<string>>;

  private constructor(private readonly o: PackageStoreOptions) {}

  /** Open the store: measure every org's entries (and remove temp files a crash left). Call before RootStore.open charges roots. */
  static async open(o: PackageStoreOptions): Promise<PackageStore> {
    const s = new PackageStore(o);
    await mkdir(o.dir, { recursive: true, mode: 0o700 });
    await chmod(o.dir, 0o700);
    for (const org of await readdir(o.dir)) {
      if (!NAME_RE.test(org)) continue;
      const st = s.state(org);
      const { kept } = await runStoreWorker<ScanResult>({ op: 'scan', top: join(o.dir, org), sweep: false, kinds: KINDS });
      for (const [ino, blocks, kind] of kept) {
        st.bytes[KINDS[kind]!] += blocks * 512;
        st.inodes.add(ino);
      }
      await s.measureDirs(org, st);
    }
    s.updateGauges();
    return s;
  }

  /** Host dir of `kind` in the org's store (made on first use, 0700 like the store). */
  async dirOf(org: string, kind: StoreKind): Promise<string> {
    if (!NAME_RE.test(org)) throw new Error(`not an org name: ${org}`);
    const d = join(this.o.dir, org, kind);
    await mkdir(d, { recursive: true, mode: 0o700 });
    return d;
  }

  /** Where a temp file for an entry of the org's store is written before its rename (same dir: same device). */
  tempName(dir: string): string {
    return join(dir, `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
  }

  /** Bytes the org's store holds, all kinds (charged to the org). */
  bytes(org: string): number {
    const s = this.orgs.get(org);
    return s ? total(s) : 0;
  }

  /** Orgs with something stored. */
  orgsStoring(): string[] {
    return [...this.orgs.entries()].filter(([, s]) => total(s) > 0).map(([org]) => org);
  }

  /** Whether inode `ino` is a file of the org's store (a root's link to it is charged to the store). */
  holds(org: string): ((ino: number) => boolean) | undefined {
    const set = this.orgs.get(org)?.inodes;
    return set && set.size > 0 ? (ino) => set.has(ino) : undefined;
  }

  /** Run `fn` in the org's turn (fetch operations and sweeps of one org never overlap). */
  inTurn<T>(org: string, fn: () => Promise<T>): Promise<T> {
    const st = this.state(org);
    // Each turn ends with its dirs measured: a fan-out dir made, or emptied and removed, is charged as it is.
    const body = () => fn().finally(() => this.measureDirs(org, st).then(() => this.updateGauges()));
    const run = st.turn.then(body, body);
    st.turn = run.catch(() => undefined);
    return run;
  }

  /** A new entry is in the store (called in the org's turn). */
  added(org: string, kind: StoreKind, ino: number, blocks: number): void {
    const st = this.state(org);
    st.inodes.add(ino);
    st.bytes[kind] += blocks * 512;
    this.o.metrics.fetchStoreMisses.inc({ org: this.o.metrics.orgLabels.of(org), ecosystem: kind });
    this.updateGauges();
  }

  /** Many new entries at once (a dedupe's): one metric and gauge update. */
  addedAll(org: string, kind: StoreKind, entries: readonly (readonly [ino: number, blocks: number])[]): void {
    if (entries.length === 0) return;
    const st = this.state(org);
    for (const [ino, blocks] of entries) {
      st.inodes.add(ino);
      st.bytes[kind] += blocks * 512;
    }
    this.o.metrics.fetchStoreMisses.inc({ org: this.o.metrics.orgLabels.of(org), ecosystem: kind }, entries.length);
    this.updateGauges();
  }

  /** An entry left the store (a tarball that no longer matches its name). */
  dropped(org: string, kind: StoreKind, ino: number, blocks: number): void {
    const st = this.state(org);
    st.inodes.delete(ino);
    st.bytes[kind] = Math.max(0, st.bytes[kind] - blocks * 512);
    this.updateGauges();
  }

  hit(org: string, kind: StoreKind, n = 1): void {
    if (n > 0) this.o.metrics.fetchStoreHits.inc({ org: this.o.metrics.orgLabels.of(org), ecosystem: kind }, n);
  }

  warn(obj: Record<string, unknown>, msg: string): void {
    this.o.log.warn(obj, msg);
  }

  /**
   * A root of the org is gone (its files removed): remove the entries no root links
   * any more. Requests while one runs coalesce into one more sweep after it.
   */
  release(org: string): Promise<void> {
    const st = this.orgs.get(org);
    if (!st) return Promise.resolve();
    if (st.sweeping) {
      st.sweepAgain = true;
      return st.sweeping;
    }
    const p = this.inTurn(org, async () => {
      do {
        st.sweepAgain = false;
        await this.sweep(org, st);
      } while (st.sweepAgain);
    }).finally(() => {
      st.sweeping = undefined;
    });
    st.sweeping = p;
    return p;
  }

  /** At start, once RootStore removed what a crash left: sweep every org. */
  async releaseAll(): Promise<void> {
    for (const org of [...this.orgs.keys()]) await this.release(org);
  }

  private async sweep(org: string, st: OrgState): Promise<void> {
    const { freed } = await runStoreWorker<ScanResult>({ op: 'scan', top: join(this.o.dir, org), sweep: true, kinds: KINDS });
    for (const [ino, blocks, k] of freed) {
      const kind = KINDS[k]!;
      st.inodes.delete(ino);
      st.bytes[kind] = Math.max(0, st.bytes[kind] - blocks * 512);
    }
    if (freed.length > 0) this.o.log.info({ org, freed: freed.length, bytes: total(st) }, 'package store swept');
  }

  private async measureDirs(org: string, st: OrgState): Promise<void> {
    const top = join(this.o.dir, org);
    const blocks = async (p: string) => ((await lstat(p).catch(() => undefined))?.blocks ?? 0) * 512;
    let files = (await blocks(top)) + (await blocks(join(top, 'files')));
    for (const d of await readdir(join(top, 'files')).catch(() => [] as string[])) files += await blocks(join(top, 'files', d));
    st.dirBytes = zeroes();
    for (const kind of KINDS) st.dirBytes[kind] = kind === 'files' ? files : await blocks(join(top, kind));
  }

  private state(org: string): OrgState {
    let st = this.orgs.get(org);
    if (!st) {
      st = { bytes: zeroes(), dirBytes: zeroes(), inodes: new Set(), turn: Promise.resolve(), sweepAgain: false };
      this.orgs.set(org, st);
    }
    return st;
  }

  private updateGauges(): void {
    const { metrics } = this.o;
    for (const kind of KINDS) {
      const values = [...this.orgs.entries()].map(([org, s]): [string, number] => [org, s.bytes[kind] + s.dirBytes[kind]]);
      for (const [org, b] of metrics.orgLabels.fold(values, this.gaugeLabels[kind])) metrics.fetchStoreBytes.set({ org, ecosystem: kind }, b);
    }
  }
}

const total = (s: OrgState) => KINDS.reduce((n, k) => n + s.bytes[k] + s.dirBytes[k], 0);

/** [ino, blocks, kind: its index in KINDS] of an org's entries: kept (a scan) or removed (a sweep). */
interface ScanResult {
  kept: [number, number, number][];
  freed: [number, number, number][];
}

/** Run one walk on the store's thread (store-worker.js: synchronous calls, off the loop and libuv's pool); its one answer. */
export function runStoreWorker<T>(
  data: { op: 'dedupe'; top: string; dirs: string[] } | { op: 'scan'; top: string; sweep: boolean; kinds: readonly string[] },
): Promise<T> {
  return runWorker<T>(new URL('./store-worker.js', import.meta.url), data);
}

/**
 * Run `script` (plain JavaScript) as a thread on `data`; its one answer (a thread that
 * exits without one is an error). Without the daemon's `--import tsx`: the loader
 * doubled a thread's start (170-220 ms against 40-110 at load 10-11).
 */
export function runWorker<T>(script: URL, data: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const w = new Worker(script, { workerData: data, execArgv: [] });
    let answer: { v: T } | undefined;
    w.once('message', (m: T) => (answer = { v: m }));
    w.once('error', reject);
    w.once('exit', (code) => (answer ? resolve(answer.v) : reject(new Error(`the package store's thread stopped (exit ${code})`))));
  });
}

/**
 * Hex digest of a file's bytes, read through a handle opened without following a
 * link. `sizeHint` sizes the read buffer: a fresh 256 KiB buffer per file of a
 * node_modules (most are a few KiB) cost 8x the hashing itself (33k files: 8.5 s CPU against 1).
 */
export async function hashFile(path: string, algorithm: 'sha1' | 'sha256' | 'sha512', sizeHint = 256 * 1024): Promise<string> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const h = createHash(algorithm);
    const buf = Buffer.allocUnsafe(Math.max(4096, Math.min(sizeHint + 1, 256 * 1024)));
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
    return h.digest('hex');
  } finally {
    await fh.close();
  }
}

/** Put `tmp` (written and checked) at `dest` unless an entry is there already; true when it was placed. */
export async function placeEntry(tmp: string, dest: string): Promise<boolean> {
  const there = await lstat(dest).catch(() => undefined);
  if (there) {
    await rm(tmp, { force: true });
    return false;
  }
  await rename(tmp, dest);
  return true;
}
