// The one way in: every service that answers about a stored root (query, /ask,
// /v1/diff, /v1/check, file reads) calls `admit(keys, op)` before any other work,
// and it checks, in this order:
//   1. not ready (503 not_ready): the jail is not proved; nothing that may start a
//      server runs before (file reads start none and skip this);
//   2. busy (503 busy, Retry-After): the org is past its share of what the op holds
//      (the query wait queue, the heap budget, the file-read slots);
//   3. need tree (409 need_tree; a read answers 404 as GET on the root does).
// not_ready before need_tree on purpose: a client's `tree` callback must not upload
// to a replica that cannot serve (test/scale-out). busy before need_tree: a refused
// flood costs the daemon as little as possible. Every busy is counted under the op's
// own route (lspd_http_rejected_total{route}); a tool call counts under the route it
// mirrors. On the hot path: a few comparisons and one map look-up, nothing allocated
// but the refusal.
import { envName, type Config } from '../config.js';
import { AppError, errors } from '../errors.js';
import { FairShare, shareLimits, type ShareRefusal } from './fair-share.js';
import type { HeapBudget, HeapWork } from './heap-budget.js';
import type { Metrics } from '../metrics.js';
import type { RootInfo, RootKey } from '../store/types.js';
import { ownTextScrubber } from '../lsp/answer/own-text.js';
import type { Scrubber } from '../lsp/answer/scrub.js';

/** What an op holds while it runs, and so which share refuses it (busy). */
export type Holds = 'queue' | 'heap' | 'reads';

/** One kind of admitted work: data only, one constant per service entry (see `ops`). */
export interface AdmitOp {
  /** The route its refusals are counted under. */
  readonly route: string;
  /** Needs the jail proved (everything that may start a server). */
  readonly jail: boolean;
  readonly holds: Holds;
  /** The heap budget's work label, when it holds heap. */
  readonly work?: HeapWork;
  /** 409 need_tree, or 404 not_found for a read (GET on a root answers so). */
  readonly missing: 'need_tree' | 'not_found';
  /** Counted in lspd_org_queries_total once the jail is proved (one LSP query, whoever asks it). */
  readonly counted?: true;
  /** Marks the admitted root used (its place in the disk quota's LRU), in the look-up that finds it. */
  readonly touches?: true;
}

export const ops = {
  query: { route: '/v1/code/lsp', jail: true, holds: 'queue', missing: 'need_tree', counted: true, touches: true },
  ask: { route: '/ask', jail: true, holds: 'queue', missing: 'need_tree' },
  /** /ask's walk over a tree's files (not when cached): new memory, so the heap budget's. */
  askWalk: { route: '/ask', jail: true, holds: 'heap', work: 'walk', missing: 'need_tree' },
  diff: { route: '/v1/diff', jail: true, holds: 'heap', work: 'diff', missing: 'need_tree' },
  check: { route: '/v1/check', jail: true, holds: 'heap', work: 'check', missing: 'need_tree' },
  read: { route: '/v1/roots/:org/:repo/:sha/files/*', jail: false, holds: 'reads', missing: 'not_found', touches: true },
  upload: { route: '/v1/roots/:org/:repo/:sha', jail: false, holds: 'heap', work: 'upload', missing: 'need_tree' },
} as const satisfies Record<string, AdmitOp>;

export interface AdmissionDeps {
  config: Pick<Config, 'dataDir' | 'maxQueuedQueries' | 'orgMaxQueuedQueries' | 'orgReservePercent' | 'maxFileReads'>;
  health: { readonly jailReady: boolean; readonly reason: string | undefined };
  store: { get(key: RootKey, use?: boolean): RootInfo | undefined };
  metrics: Pick<Metrics, 'rejected' | 'orgRefusals' | 'orgLabels' | 'orgQueries'>;
  heap: Pick<HeapBudget, 'refusal'>;
}

export class Admission {
  /**
   * Queries admitted and waiting for a server (its dependencies, spawn, an in-flight
   * slot), per org: one org's flood on a slow root stops at its share and leaves
   * the rest of LSPD_MAX_QUEUED_QUERIES to the others (src/tenancy/fair-share.ts). The query
   * service takes a place (`wait`) and gives it back.
   */
  readonly queue: FairShare;
  /**
   * File reads running (LSPD_MAX_FILE_READS), per org: a read may scan a whole
   * 256 MiB file (to count its lines), so one org's flood of them must not take the
   * disk and the event loop's turns from every other org. `admit(_, ops.read)` takes
   * one; the reader gives it back.
   */
  readonly reads: FairShare;
  readonly #d: AdmissionDeps;
  /** not_ready reasons quote the host (a bwrap path, an errno naming a file under the data dir). */
  readonly #ownText: Scrubber;
  /** lspd_org_queries_total's child per org label (bounded as the labels are): a labelled inc() hashes its labels every call. */
  readonly #orgQueries = new Map<string, { inc(): void }>();

  constructor(d: AdmissionDeps) {
    const c = d.config;
    this.#d = d;
    this.#ownText = ownTextScrubber(c.dataDir);
    this.queue = new FairShare(shareLimits(c.maxQueuedQueries, { orgCap: c.orgMaxQueuedQueries, reservePercent: c.orgReservePercent, floor: 1 }));
    this.reads = new FairShare(shareLimits(c.maxFileReads, { orgCap: 0, reservePercent: c.orgReservePercent, floor: 1 }));
  }

  /**
   * Admit `op` on one root (its info) or on several (a diff's base and head: theirs, in
   * order, one org), or throw the first refusal. `route`: where a refusal is counted,
   * when another route's service runs the op (/ask's LSP queries are ops.query).
   */
  admit(key: RootKey, op: AdmitOp, route?: string): RootInfo;
  admit(keys: readonly RootKey[], op: AdmitOp, route?: string): RootInfo[];
  admit(keys: RootKey | readonly RootKey[], op: AdmitOp, route: string = op.route): RootInfo | RootInfo[] {
    const many = Array.isArray(keys);
    const first = many ? (keys as readonly RootKey[])[0]! : (keys as RootKey);
    const { metrics } = this.#d;
    if (op.jail) this.assertServing();
    if (op.counted) this.#countQuery(metrics.orgLabels.of(first.org));
    const refused = this.#busy(first.org, op);
    if (refused) {
      metrics.rejected.inc({ route });
      throw refused;
    }
    if (!many) {
      const info = this.#d.store.get(first, op.touches);
      if (!info) throw this.#missing(first, op, undefined);
      return info;
    }
    const list = keys as readonly RootKey[];
    return list.map((k, i) => {
      const info = this.#d.store.get(k, op.touches);
      if (!info) throw this.#missing(k, op, i === 0 ? 'base' : 'head');
      return info;
    });
  }

  #countQuery(org: string): void {
    let c = this.#orgQueries.get(org);
    if (!c) this.#orgQueries.set(org, (c = this.#d.metrics.orgQueries.tally({ org })));
    c.inc();
  }

  /** 503 not_ready until the jail is proved: nothing that may start a server runs before. */
  assertServing(): void {
    const { health } = this.#d;
    if (!health.jailReady) throw errors.notReady(`Nothing is served: ${this.#ownText(health.reason ?? 'the jail is not proved')}.`);
  }

  /** Take a place in the query wait queue for `org`, or 503 busy counted under `route`. Give it back with `queue.give`. */
  wait(org: string, route: string): void {
    const why = this.queue.take(org);
    if (why === undefined) return;
    this.#d.metrics.rejected.inc({ route });
    throw this.#queueRefusal(org, why);
  }

  /** Work of `op` (a heap holder) that starts later than its admission: 503 busy past the heap budget, counted. */
  heap(org: string, op: AdmitOp): void {
    const refused = this.#d.heap.refusal(op.work!, org);
    if (!refused) return;
    this.#d.metrics.rejected.inc({ route: op.route });
    throw refused;
  }

  #busy(org: string, op: AdmitOp): AppError | undefined {
    if (op.holds === 'queue') {
      // An org already past its share of the wait queue is refused before any other
      // work (its cache hits included). A full queue (no org past its share) still
      // serves cache hits: the place is taken only when a server is needed.
      const past = this.queue.check(org);
      return past === 'share' || past === 'cap' ? this.#queueRefusal(org, past) : undefined;
    }
    if (op.holds === 'heap') return this.#d.heap.refusal(op.work!, org);
    const why = this.reads.take(org);
    return why === undefined ? undefined : this.#readsRefusal(org, why);
  }

  #missing(key: RootKey, op: AdmitOp, which: 'base' | 'head' | undefined): AppError {
    // A read took its slot at admission: a refusal after it gives it back.
    if (op.holds === 'reads') this.reads.give(key.org);
    if (op.missing === 'not_found') return errors.notFound();
    if (which === undefined) return errors.needTree();
    return errors.needTree(`The ${which} root ${key.sha} has not been uploaded; upload it and retry.`, { root: key, missing: which });
  }

  #queueRefusal(org: string, why: ShareRefusal): AppError {
    const { config, metrics } = this.#d;
    metrics.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'queue' });
    if (why === 'full') return errors.busy(`More than ${config.maxQueuedQueries} queries are waiting for a language server.`, 1);
    const held = this.queue.held(org);
    const past = why === 'cap' ? `its limit (${envName('orgMaxQueuedQueries')})` : 'its share: the rest of the queue is kept for other orgs';
    return errors.busy(`Org ${org} already has ${held} queries waiting for a language server, ${past}; retry shortly.`, 1);
  }

  #readsRefusal(org: string, why: ShareRefusal): AppError {
    const { config, metrics } = this.#d;
    metrics.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'file_reads' });
    const what = why === 'full' ? `${config.maxFileReads} file reads are running` : `org ${org} already has ${this.reads.held(org)} file reads running`;
    return errors.busy(`${what}; retry shortly.`, 1);
  }
}
