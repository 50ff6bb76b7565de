// Quota and charging, the store's second job kept out of store.ts (which owns the
// roots and their files): what each org is charged (its roots' trees and dependency
// caches by incremental.ts's rules, and its package store), the room an upload has
// under its org's quota, the disk gauges, and evicting least recently used unheld
// roots when an org or the store is over its quota (the choice itself: eviction.ts).
import { join } from 'node:path';
import type { EntryLimits } from './entry-check.js';
import { pickVictims } from './eviction.js';
import { depsCharge, treeCharge } from './incremental.js';
import type { IndexEntry } from './root-index.js';
import type { StoreDeps } from './store.js';
import { rootId, type RootInfo, type RootKey } from './types.js';

/** What the quota reads of the store and asks of it. */
export interface QuotaHost {
  readonly index: ReadonlyMap<string, IndexEntry>;
  held(key: RootKey): boolean;
  /** Remove root `id` under its lock, unless it went or became held meanwhile. */
  evict(id: string): Promise<void>;
  /** Work the store's close() waits for. */
  track(p: Promise<unknown>): void;
}

/** The usage id of an org's package store in the quota's view: never a root id (those have no NUL), never a victim. */
const packagesId = (org: string) => `\u0000packages/${org}`;

export class StoreQuota {
  private run: Promise<void> = Promise.resolve();
  /** Org labels lspd_org_disk_bytes has shown, so an org whose roots all went reads 0, not its last value. */
  private readonly orgGaugeLabels = new Set<string>();

  constructor(
    private readonly deps: StoreDeps,
    private readonly host: QuotaHost,
  ) {}

  /** Bytes each org stores (trees and dependency caches). */
  orgUsage(): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.host.index.values()) out.set(e.key.org, (out.get(e.key.org) ?? 0) + e.treeBytes + e.depsBytes);
    const p = this.deps.packages;
    for (const org of p?.orgsStoring() ?? []) out.set(org, (out.get(org) ?? 0) + p!.bytes(org));
    return out;
  }

  /** The most disk one org may use (LSPD_ORG_DISK_QUOTA_BYTES, never more than the global quota). */
  get orgQuotaBytes(): number {
    const { diskQuotaBytes, orgDiskQuotaBytes } = this.deps.config;
    return Math.min(orgDiskQuotaBytes ?? diskQuotaBytes, diskQuotaBytes);
  }

  /**
   * The entry limits of an upload by `org`: the configured ones, and the room the
   * org has: its quota less what it stores that cannot be evicted now (held roots).
   * The room is always given: a tree within every limit can still take more disk
   * than its file bytes (200,000 directories are 800 MB of blocks).
   */
  limitsFor(org: string): EntryLimits {
    const { maxTreeBytes, maxTreeFiles, maxFileBytes, diskBlockBytes: blockBytes, maxHardLinksPerFile } = this.deps.config;
    const quota = this.orgQuotaBytes;
    let held = 0;
    for (const e of this.host.index.values()) if (e.key.org === org && this.host.held(e.key)) held += e.treeBytes + e.depsBytes;
    const room = Math.max(0, quota - held);
    const why =
      `The tree does not fit org ${JSON.stringify(org)}'s disk: its quota is ${quota} bytes` +
      (held > 0 ? `, ${held} of which are held by roots in use, leaving ${room}` : '') +
      '; delete roots of this org or upload a smaller tree.';
    return { maxTreeBytes, maxTreeFiles, maxFileBytes, blockBytes, maxHardLinksPerFile, room: { bytes: room, why } };
  }

  /**
   * Evict least recently used unheld roots until every org fits its quota and the
   * store the global one, taking from `grower` (whose upload or fetch grew the
   * store) and orgs above their share first (eviction.ts); runs one at a time.
   */
  enforce(grower?: string, protect?: string): Promise<void> {
    const { index } = this.host;
    const run = this.run.then(async () => {
      const usage = [...index.entries()].map(([id, e]) => ({ id, org: e.key.org, bytes: e.treeBytes + e.depsBytes, lastUsedMs: e.lastUsedMs }));
      // The org's package store counts as the org's, and is never evicted itself: it shrinks as the roots that link it go.
      const p = this.deps.packages;
      for (const org of p?.orgsStoring() ?? []) usage.push({ id: packagesId(org), org, bytes: p!.bytes(org), lastUsedMs: 0 });
      const spare = (id: string) => id === protect || !index.has(id) || this.host.held(index.get(id)!.key);
      const rule = { globalBytes: this.deps.config.diskQuotaBytes, orgBytes: this.orgQuotaBytes, ...(grower !== undefined ? { grower } : {}) };
      for (const id of pickVictims(usage, rule, spare)) await this.host.evict(id);
    });
    this.run = run.catch((err: unknown) => this.deps.log.error({ err }, 'quota enforcement failed'));
    return this.run;
  }

  /** What a new root's tree is charged: its own disk only while the base it was composed on is stored. */
  newTreeCharge(info: RootInfo, baseKey: RootKey | undefined): number {
    return treeCharge(info, baseKey !== undefined && this.host.index.has(rootId(baseKey)));
  }

  /** Charge every root read at open, then show the gauges. */
  async chargeLoaded(): Promise<void> {
    await Promise.all(
      [...this.host.index.values()].map(async (e) => {
        e.treeBytes = treeCharge(e.info, this.baseStored(e));
        await this.chargeDeps(e);
      }),
    );
    this.updateGauges();
  }

  /** Re-measure a root's dependency cache (a fetch wrote it). */
  async chargeDeps(e: IndexEntry): Promise<void> {
    e.depsBytes = await depsCharge(join(e.dir, 'deps'), e.info, this.baseStored(e), this.shared(e.key.org));
  }

  /** A removed root's dependents hold the files they linked from it alone now: charge them in full (incremental.ts). */
  chargeDependents(gone: IndexEntry): void {
    for (const e of this.host.index.values()) {
      if (e.info.base !== gone.key.sha || e.key.org !== gone.key.org || e.key.repo !== gone.key.repo) continue;
      e.treeBytes = treeCharge(e.info, false);
      this.host.track(
        depsCharge(join(e.dir, 'deps'), e.info, false, this.shared(e.key.org)).then(
          (n) => {
            e.depsBytes = n;
            this.updateGauges();
          },
          () => {},
        ),
      );
    }
  }

  updateGauges(): void {
    const { metrics } = this.deps;
    const perOrg = this.orgUsage();
    let bytes = 0;
    for (const b of perOrg.values()) bytes += b;
    metrics.roots.set(this.host.index.size);
    metrics.rootsBytes.set(bytes);
    for (const [org, b] of metrics.orgLabels.fold(perOrg, this.orgGaugeLabels)) metrics.orgDiskBytes.set({ org }, b);
  }

  /**
   * Whether the root `e` was composed on is stored, and is the same one: a base
   * deleted and uploaded again later holds other inodes than the ones `e` links.
   */
  private baseStored(e: IndexEntry): boolean {
    if (e.info.base === undefined) return false;
    const b = this.host.index.get(rootId({ ...e.key, sha: e.info.base }));
    return b !== undefined && b.info.createdAt <= e.info.createdAt;
  }

  /** Inodes of the org's package store: a root's links to them are charged to the store. */
  private shared(org: string): ((ino: number) => boolean) | undefined {
    return this.deps.packages?.holds(org);
  }
}
