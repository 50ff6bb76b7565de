// RootStore: the on-disk store of uploaded trees. It owns the data dir layout,
//   <dataDir>/roots/<org>/<repo>/<sha>/{tree/, deps/, meta.json}   visible roots
//   <dataDir>/staging/<random>/                                    uploads in progress
//   <dataDir>/trash/<random>/                                      roots being removed
// An upload is built in staging and appears with one rename(2), so a crash at any
// moment leaves the whole root or nothing; staging and trash are emptied at open.
// It keeps an in-memory index (rebuilt from meta.json files at open) so `get` is
// synchronous, and serializes work per root with an in-process lock. What roots
// cost and which go when an org or the store is over its quota: quota.ts.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import type { Config } from '../config.js';
import { errors, isAppError } from '../errors.js';
import { FairShare, shareLimits } from '../tenancy/fair-share.js';
import type { PhaseVerdict } from '../health.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { fsyncDir, syncFilesystem, umaskStripsModes } from './disk.js';
import { baseMissing, checkGitTree, loadBaseIndex } from './incremental.js';
import { loadIndex, type IndexEntry } from './root-index.js';
import { checkRootKey } from './root-key.js';
import { StoreQuota } from './quota.js';
import { ingestTar } from './tar-ingest.js';
import { encodeTreeIndex, TREE_INDEX, type TreeEntry } from './tree-index.js';
import { storageError } from './tree-writer.js';
import { stopWriterThreads, warmWriterThreads } from './write-pool.js';
import { removeTree } from './remove-tree.js';
import { UploadMemory } from './upload-memory.js';
import {
  rootId,
  type HoldCheck,
  type ListOptions,
  type ListPage,
  type PutOptions,
  type PackageCharge,
  type PutResult,
  type RemoveListener,
  type RemoveReason,
  type RootInfo,
  type RootKey,
} from './types.js';

export interface StoreDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** The per-org package store (src/fetch/package-store.ts), charged to its org. */
  packages?: PackageCharge;
}

const META = 'meta.json';
/** A root's last use is written to its meta.json mtime at most this often (LRU order survives restarts). */
const PERSIST_USE_MS = 60_000;

export class RootStore {
  private readonly rootsDir: string;
  private readonly stagingDir: string;
  private readonly trashDir: string;
  private readonly index = new Map<string, IndexEntry>();
  /** Tail of each root's queue of work (put, delete, evict). */
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly removeListeners: RemoveListener[] = [];
  private holdCheck: HoldCheck = () => false;
  /**
   * Uploads running (LSPD_MAX_UPLOADS), fair-shared per org: each holds a staging
   * dir, writer-queue bytes, a root's lock and, once its layer is in, its base's
   * index, so one org's flood of them (or of stalled ones) must not take them all.
   */
  private readonly uploads: FairShare;
  /** What running uploads hold in memory (LSPD_UPLOAD_MEMORY_BYTES), fair-shared per org. */
  private readonly memory: UploadMemory;
  private readonly quota: StoreQuota;
  private closed = false;

  private constructor(
    private readonly deps: StoreDeps,
    private readonly fixModes: boolean,
  ) {
    const d = deps.config.dataDir;
    this.rootsDir = join(d, 'roots');
    this.stagingDir = join(d, 'staging');
    this.trashDir = join(d, 'trash');
    const c = deps.config;
    this.uploads = new FairShare(shareLimits(c.maxUploads, { orgCap: 0, reservePercent: c.orgReservePercent, floor: 1 }));
    const { metrics } = deps;
    this.memory = new UploadMemory(c.uploadMemoryBytes, c.orgReservePercent, (org) =>
      metrics.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'upload_memory' }),
    );
    const { index } = this;
    const held = (key: RootKey) => this.holdCheck(key);
    this.quota = new StoreQuota(deps, { index, held, evict: (id) => this.evict(id), track: (p) => this.track(p) });
  }

  /** Create the layout, remove what a crash left in staging and trash, load the index. */
  static async open(deps: StoreDeps): Promise<RootStore> {
    const d = deps.config.dataDir;
    const madeDataDir = await mkdir(d, { recursive: true, mode: 0o755 });
    for (const sub of ['staging', 'trash']) {
      const leftover = await readdir(join(d, sub)).catch(() => []);
      if (leftover.length > 0) deps.log.info({ dir: sub, entries: leftover.length }, 'removing what an earlier run left');
      await removeTree(join(d, sub));
      await mkdir(join(d, sub), { mode: 0o700 }); // half-written uploads stay private
    }
    // Removed roots' links are gone now: what no root links leaves the package store before roots are charged.
    await deps.packages?.releaseAll();
    const fixModes = await umaskStripsModes(join(d, 'staging'));
    await mkdir(join(d, 'roots'), { recursive: true, mode: 0o755 });
    if (fixModes) {
      // An operator's own data dir keeps its mode; what lspd creates is opened up.
      if (madeDataDir !== undefined) await chmod(d, 0o755);
      await chmod(join(d, 'roots'), 0o755);
    }
    const store = new RootStore(deps, fixModes);
    await store.load();
    await warmWriterThreads();
    return store;
  }

  /** For /readyz: can an upload be written and made durable right now? Never names a host path. */
  async checkWritable(): Promise<PhaseVerdict> {
    try {
      await umaskStripsModes(this.stagingDir);
      return { ok: true };
    } catch (err) {
      return { ok: false, reason: `the data directory is not writable (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
  }

  /** The root's info; `use`: marked used now as well (`touch`), with the same look-up. */
  get(key: RootKey, use = false): RootInfo | undefined {
    const e = this.index.get(rootId(key));
    if (e && use) this.used(e);
    return e?.info;
  }

  /** Host path of a stored root's tree (read-only to everything but the store). */
  treeDir(key: RootKey): string {
    return join(this.rootDir(key), 'tree');
  }

  /** Host path of a root's dependency cache, created empty with the root (the FETCH phase fills it). */
  depsDir(key: RootKey): string {
    return join(this.rootDir(key), 'deps');
  }

  /** Mark a root used now (LRU order for the quota). */
  touch(key: RootKey): void {
    const e = this.index.get(rootId(key));
    if (e) this.used(e);
  }

  private used(e: IndexEntry): void {
    e.lastUsedMs = Date.now();
    if (e.lastUsedMs - e.persistedUseMs < PERSIST_USE_MS) return;
    e.persistedUseMs = e.lastUsedMs;
    const t = new Date(e.lastUsedMs);
    utimes(join(e.dir, META), t, t).catch(() => {}); // best effort: only the order after a restart depends on it
  }

  /**
   * The root this one most likely follows: the base it was composed on (an
   * incremental upload), else the newest root of the same org and repo stored
   * before it. What a warm-up compares against to find the files a commit changed.
   */
  predecessorOf(key: RootKey): RootKey | undefined {
    const self = this.index.get(rootId(key));
    if (!self) return undefined;
    if (self.info.base !== undefined && this.index.has(rootId({ ...key, sha: self.info.base }))) return { ...key, sha: self.info.base };
    let best: IndexEntry | undefined;
    for (const e of this.index.values()) {
      if (e === self || e.key.org !== key.org || e.key.repo !== key.repo || e.info.createdAt > self.info.createdAt) continue;
      if (!best || e.info.createdAt > best.info.createdAt) best = e;
    }
    return best && { ...best.key };
  }

  /** The `limit` most recently used roots, most recent first (after a restart: by meta.json's mtime). */
  recentlyUsed(limit: number): RootKey[] {
    return [...this.index.values()]
      .sort((a, b) => b.lastUsedMs - a.lastUsedMs)
      .slice(0, limit)
      .map((e) => ({ ...e.key }));
  }

  setHoldCheck(check: HoldCheck): void {
    this.holdCheck = check;
  }

  /** Be told (and awaited) before a root's files are removed. Returns an unsubscribe function. */
  onRemove(listener: RemoveListener): () => void {
    this.removeListeners.push(listener);
    return () => {
      const i = this.removeListeners.indexOf(listener);
      if (i >= 0) this.removeListeners.splice(i, 1);
    };
  }

  /** Bytes each org stores (trees, dependency caches, its package store). */
  orgUsage(): Map<string, number> {
    return this.quota.orgUsage();
  }

  /** The most disk one org may use (LSPD_ORG_DISK_QUOTA_BYTES, never more than the global quota). */
  get orgQuotaBytes(): number {
    return this.quota.orgQuotaBytes;
  }

  /**
   * Roots in id order, a page at a time. Only the orgs `opts.orgs` accepts are
   * paged over, so `next` never names a root the caller may not see.
   */
  list(opts: ListOptions): ListPage {
    const visible = opts.orgs;
    const ids = [...this.index.entries()]
      .filter(([, e]) => !visible || visible(e.key.org))
      .map(([id]) => id)
      .sort();
    let start = 0;
    if (opts.after !== undefined) {
      const after = opts.after;
      while (start < ids.length && ids[start]! <= after) start++;
    }
    const page = ids.slice(start, start + opts.limit);
    const roots = page.map((id) => this.index.get(id)!.info);
    return start + opts.limit < ids.length ? { roots, next: page[page.length - 1]! } : { roots };
  }

  /**
   * Store the tar in `body` as `key`. An existing root answers created:false after
   * the body is read and discarded; concurrent puts of one key run one at a time,
   * so exactly one creates it. On any failure nothing is left on disk.
   */
  async put(key: RootKey, body: Readable, opts: PutOptions): Promise<PutResult> {
    key = checkRootKey(key);
    if (this.closed) throw errors.shuttingDown('The daemon is shutting down.');
    const id = rootId(key);
    const started = performance.now();
    this.takeUploadSlot(key.org);
    const result = await this.locked(id, async (): Promise<PutResult> => {
      const existing = this.index.get(id);
      if (existing) {
        await discard(body, this.deps.config.uploadReadTimeoutMs);
        this.touch(key);
        this.observe('exists', started);
        // Nothing changes, but a caller that names the tree learns when the stored root is not it.
        checkStoredTree(existing.info, opts.gitTree);
        return { created: false, info: existing.info };
      }
      return this.create(key, body, opts, started);
    }).finally(() => this.uploads.give(key.org));
    if (result.created) await this.quota.enforce(key.org, id);
    return result;
  }

  /** Uploads running now, per org (what the fair share of LSPD_MAX_UPLOADS counts). */
  uploadsRunning(org: string): number {
    return this.uploads.held(org);
  }

  /** Memory the org's running uploads hold (LSPD_UPLOAD_MEMORY_BYTES' units). */
  uploadMemoryHeld(org: string): number {
    return this.memory.heldBytes(org);
  }

  /** An upload slot for `org`, or 503 busy before a byte of its body is read. */
  private takeUploadSlot(org: string): void {
    const refused = this.uploads.take(org);
    if (!refused) return;
    const { metrics, config } = this.deps;
    metrics.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'uploads' });
    const why = refused === 'full' ? `${config.maxUploads} uploads are running` : `org ${org} already has ${this.uploads.held(org)} uploads running`;
    throw errors.busy(`${why}; retry shortly.`, 1);
  }

  /** Remove a root, its dependency cache, and (through onRemove) its sessions. False if absent. */
  async delete(key: RootKey): Promise<boolean> {
    key = checkRootKey(key);
    const id = rootId(key);
    return this.locked(id, async () => {
      const e = this.index.get(id);
      if (!e) return false;
      await this.remove(id, e, 'deleted');
      return true;
    });
  }

  /** Re-measure a root's dependency cache (after a fetch wrote it) and apply the quota. */
  async refreshUsage(key: RootKey): Promise<void> {
    const e = this.index.get(rootId(key));
    if (!e) return;
    await this.quota.chargeDeps(e);
    this.quota.updateGauges();
    await this.quota.enforce(key.org);
  }

  /** Finish what is queued (uploads, removals) and refuse new uploads. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.locks.size > 0 || this.background.size > 0) {
      await Promise.allSettled([...this.locks.values(), ...this.background]);
    }
    await stopWriterThreads();
  }

  private rootDir(key: RootKey): string {
    return join(this.rootsDir, key.org, key.repo, key.sha);
  }

  private async create(key: RootKey, body: Readable, opts: PutOptions, started: number): Promise<PutResult> {
    const { config, log, metrics } = this.deps;
    const id = rootId(key);
    const staging = join(this.stagingDir, randomBytes(12).toString('hex'));
    const final = this.rootDir(key);
    let info: RootInfo;
    let changed: string[] | undefined;
    let syncMs = 0;
    let ingestMs = 0;
    let resolveSteps = 0;
    const baseKey = opts.base !== undefined ? { ...key, sha: opts.base } : undefined;
    const memory = this.memory.lease(key.org);
    try {
      let base: { treeDir: string; indexBytes: () => Promise<number>; entries: () => Promise<TreeEntry[]> } | undefined;
      if (baseKey) {
        const b = this.index.get(rootId(baseKey));
        if (!b) throw baseMissing(key, baseKey.sha);
        // Read once the layer is in (tar-ingest.ts), by then the base may be gone.
        const gone = () => this.index.get(rootId(baseKey)) !== b;
        const entries = async () => {
          if (gone()) throw baseMissing(key, baseKey.sha, 'was removed during the upload');
          return loadBaseIndex(key, baseKey.sha, b.dir).catch((err: unknown) => {
            throw gone() ? baseMissing(key, baseKey.sha, 'was removed during the upload') : err;
          });
        };
        // An index that cannot be read is refused by entries(), naming why.
        const indexBytes = () =>
          stat(join(b.dir, TREE_INDEX)).then(
            (st) => st.size,
            () => 0,
          );
        base = { treeDir: join(b.dir, 'tree'), indexBytes, entries };
        this.touch(baseKey);
      }
      await this.mkdir755(staging);
      await this.mkdir755(join(staging, 'tree'));
      await this.mkdir755(join(staging, 'deps'));
      const ingestStart = performance.now();
      const r = await ingestTar({
        body,
        gzip: opts.gzip,
        dir: join(staging, 'tree'),
        limits: this.quota.limitsFor(key.org),
        fixModes: this.fixModes,
        signal: opts.signal,
        readTimeoutMs: config.uploadReadTimeoutMs,
        memory,
        onBodyBytes: (n) => metrics.uploadBytes.inc(n),
        ...(base ? { base } : {}),
      });
      ingestMs = Math.round(performance.now() - ingestStart);
      resolveSteps = r.resolveSteps;
      const gitTree = await checkGitTree(r.entries, opts.gitTree);
      changed = r.changed;
      const createdMs = Date.now();
      info = {
        root: { ...key },
        files: r.files,
        bytes: r.bytes,
        languages: r.languages,
        createdAt: new Date(createdMs).toISOString(),
        generation: `${createdMs.toString(36)}-${randomBytes(8).toString('hex')}`,
        storedBytes: r.storedBytes,
        diskBytes: r.diskBytes,
        ...(opts.base !== undefined ? { ownDiskBytes: r.ownDiskBytes, base: opts.base } : {}),
        gitTree,
      };
      await writeFile(join(staging, TREE_INDEX), await encodeTreeIndex(r.entries), { flag: 'wx', mode: 0o644 });
      // Everything under the staging dir, its metadata and the org/repo dirs are made
      // durable by one syncfs (it writes back every dirty page and inode of the
      // filesystem, so no per-file fsync is needed); only then is the root renamed
      // into sight, and the rename made durable by fsyncing its parent.
      await writeFile(join(staging, META), JSON.stringify({ version: 1, ...info }) + '\n', { flag: 'wx', mode: 0o644 });
      await this.ensureDir755(dirname(dirname(final)));
      await this.ensureDir755(dirname(final));
      const syncStart = performance.now();
      await syncFilesystem(staging);
      syncMs = Math.round(performance.now() - syncStart);
      await rename(staging, final);
      await fsyncDir(dirname(final));
    } catch (raw) {
      await removeTree(staging).catch((err: unknown) => log.error({ err }, 'could not remove staging'));
      // The base was deleted or evicted while its files were being linked: the client uploads the whole tree.
      const baseGone = baseKey !== undefined && (raw as NodeJS.ErrnoException)?.code === 'ENOENT' && !this.index.has(rootId(baseKey));
      const err = baseGone ? baseMissing(key, baseKey.sha, 'was removed during the upload') : isAppError(raw) ? raw : storageError(raw);
      const result = !isAppError(err)
        ? 'failed'
        : err.code === 'upload_aborted'
          ? 'aborted'
          : err.status >= 500 && !isQuotaRefusal(err) && err.code !== 'busy'
            ? 'failed'
            : 'refused';
      this.observe(result, started);
      // A refusal is the client's business and a full disk the operator's; only the rest is a bug.
      if (isAppError(err)) log[err.status >= 500 ? 'warn' : 'info']({ root: id, code: err.code, ...err.extra }, 'upload not stored');
      else log.error({ root: id, err }, 'upload not stored');
      throw err;
    } finally {
      memory.release();
    }
    const now = Date.now();
    const treeBytes = this.quota.newTreeCharge(info, baseKey);
    this.index.set(id, { key: { ...key }, info, dir: final, treeBytes, depsBytes: 0, lastUsedMs: now, persistedUseMs: now });
    this.quota.updateGauges();
    const ms = Math.round(performance.now() - started);
    this.observe('created', started);
    const orgBytes = this.orgUsage().get(key.org) ?? 0;
    log.info(
      {
        root: id,
        files: info.files,
        bytes: info.bytes,
        storedBytes: info.storedBytes,
        diskBytes: info.diskBytes,
        ownDiskBytes: info.ownDiskBytes,
        base: info.base,
        languages: info.languages,
        ms,
        ingestMs,
        syncMs,
        resolveSteps,
        orgBytes,
        orgQuotaBytes: this.orgQuotaBytes,
      },
      'root stored',
    );
    return { created: true, info, ...(changed ? { changed } : {}) };
  }

  /** Drop from the index, tell listeners, rename out of sight, then delete the files. */
  private async remove(id: string, e: IndexEntry, reason: RemoveReason, wait = true): Promise<void> {
    this.index.delete(id);
    this.quota.chargeDependents(e);
    this.quota.updateGauges();
    for (const listener of [...this.removeListeners]) {
      try {
        await listener(e.key, reason);
      } catch (err) {
        this.deps.log.error({ err, root: id }, 'remove listener failed');
      }
    }
    const trash = join(this.trashDir, randomBytes(12).toString('hex'));
    await rename(e.dir, trash);
    const gone = removeTree(trash)
      .then(async () => {
        // Its links are gone: the package store frees what no root of the org links any more.
        if (this.deps.packages) {
          await this.deps.packages.release(e.key.org);
          this.quota.updateGauges();
        }
      })
      .catch((err: unknown) => this.deps.log.error({ err, root: id }, 'could not delete removed root'));
    this.deps.log.info({ root: id, reason, bytes: e.treeBytes + e.depsBytes }, 'root removed');
    if (wait) await gone;
    else this.track(gone);
  }

  /** The quota's eviction of `id`: under its lock, unless it went or became held meanwhile. */
  private evict(id: string): Promise<void> {
    return this.locked(id, async () => {
      const e = this.index.get(id);
      if (!e || this.holdCheck(e.key)) return;
      await this.remove(id, e, 'evicted', false);
      this.deps.metrics.evictions.inc();
    });
  }

  /** Run `fn` after every earlier task on the same root. */
  private locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(id) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.locks.set(id, tail);
    void tail.then(() => {
      if (this.locks.get(id) === tail) this.locks.delete(id);
    });
    return run;
  }

  private async load(): Promise<void> {
    const { entries, junk } = await loadIndex(this.rootsDir, META);
    for (const e of entries) this.index.set(rootId(e.key), e);
    for (const dir of junk) {
      // Only a rename puts anything here, so this is not ours or was damaged by hand.
      this.deps.log.warn({ dir: dir.slice(this.deps.config.dataDir.length + 1) }, 'removing an unreadable root');
      await removeTree(dir);
    }
    await this.quota.chargeLoaded();
    this.deps.log.info({ roots: this.index.size }, 'store opened');
    await this.quota.enforce();
  }

  private async mkdir755(dir: string): Promise<void> {
    await mkdir(dir, { mode: 0o755 });
    // The jails run as other uids; a restrictive umask must not hide the tree from them.
    if (this.fixModes) await chmod(dir, 0o755);
  }

  /** mkdir755 for a directory other uploads may be creating at the same moment (an org or repo dir). */
  private async ensureDir755(dir: string): Promise<void> {
    try {
      await this.mkdir755(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }

  private observe(result: string, started: number): void {
    this.deps.metrics.uploadSeconds.observe({ result }, (performance.now() - started) / 1000);
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }
}

/** An existing root asked for under a git tree id it does not have: tree_mismatch (it stays as it is). */
function checkStoredTree(info: RootInfo, gitTree: string | undefined): void {
  if (gitTree !== undefined && info.gitTree !== undefined && gitTree !== info.gitTree) {
    throw errors.treeMismatch(gitTree, info.gitTree, 'The root stored under this sha is not the git tree x-lspd-git-tree names; it was left as it is.');
  }
}

/** Read and drop the rest of a body (an upload of a root that already exists); one that stalls is cut as an upload is. */
function discard(body: Readable, readTimeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (body.readableEnded || body.destroyed) return resolve();
    let timer: NodeJS.Timeout;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        detach();
        reject(errors.uploadAborted(`The upload stalled: no data arrived for ${readTimeoutMs} ms; nothing was stored.`));
      }, readTimeoutMs);
    };
    const done = () => {
      detach();
      resolve();
    };
    const detach = () => {
      clearTimeout(timer);
      body.off('data', arm);
      body.off('end', done);
      body.off('close', done);
      body.off('error', done);
    };
    body.on('data', arm);
    body.on('end', done);
    body.on('close', done);
    body.on('error', done);
    arm();
    body.resume();
  });
}

/** A refusal because the org has no room (507, but the client's doing, not the disk failing). */
function isQuotaRefusal(err: { code: string; extra: Record<string, unknown> }): boolean {
  return err.code === 'insufficient_storage' && err.extra.limit === 'org_disk_quota';
}
