// Every Prometheus metric lspd exports, declared once on a registry that is
// passed in (no global default registry, so tests can run several daemons).
// Names follow lspd_<area>_<thing>_{total,seconds,bytes}.
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { configSchema, type Config } from './config.js';
import { OrgLabels } from './tenancy/org-labels.js';
import { BoundHistogram } from './util/bound-histogram.js';

export function createMetrics(config?: Pick<Config, 'metricsMaxOrgs'>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Gauge<L>({ name, help, labelNames, registers });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
    new Histogram<L>({ name, help, labelNames, buckets, registers });
  /**
   * A counter bumped on every query (cache look-ups, queries by org): a child from
   * `tally` counts in a plain number and hands it to prom-client when the counter is
   * read (its `collect`, before every scrape and every get()), since prom-client's
   * labelled inc() validates and hashes its labels object on each call.
   */
  const tallied = <L extends string>(name: string, help: string, labelNames: readonly L[]) => {
    const tallies = new Map<string, { labels: Partial<Record<L, string>>; n: number }>();
    const c = new Counter<L>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        for (const t of tallies.values())
          if (t.n > 0) {
            this.inc(t.labels, t.n);
            t.n = 0;
          }
      },
    });
    return Object.assign(c, {
      /** The child of one label set (the same one for the same labels): keep it, and count through it. */
      tally(labels: Partial<Record<L, string>>): { inc(): void } {
        const key = labelNames.map((n) => labels[n] ?? '').join('\u0000');
        let t = tallies.get(key);
        if (!t) tallies.set(key, (t = { labels: { ...labels }, n: 0 }));
        const counted = t;
        return {
          inc() {
            counted.n++;
          },
        };
      },
    });
  };
  /** Caches whose bytes `lspd_cache_bytes` reports, read at each scrape. */
  const cacheSources = new Map<string, () => number>();
  return {
    registry,
    cacheBytes: new Gauge<'cache'>({
      name: 'lspd_cache_bytes',
      help: 'Bytes each in-memory cache holds, as it charges them against its byte budget.',
      labelNames: ['cache'],
      registers,
      collect() {
        for (const [cache, bytes] of cacheSources) this.set({ cache }, bytes());
      },
    }),
    /** Report a cache's bytes in `lspd_cache_bytes{cache=name}` (the last one watched under a name wins). */
    watchCache(name: string, bytes: () => number): void {
      cacheSources.set(name, bytes);
    },
    // Observed on every request: its children observe with no label look-up (bound-histogram.ts).
    httpSeconds: new BoundHistogram({
      name: 'lspd_http_request_seconds',
      help: 'HTTP request latency by route, op, server and status.',
      labelNames: ['route', 'op', 'server', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 70],
      registers,
    }),
    sessions: gauge('lspd_sessions', 'Language-server sessions by server and state.', ['server', 'state']),
    spawns: counter('lspd_session_spawns_total', 'Language-server spawns.', ['server']),
    crashes: counter('lspd_session_crashes_total', 'Language servers that exited unasked.', ['server']),
    restarts: counter('lspd_session_restarts_total', 'Sessions restarted (crash, wedge, fetch done).', ['server', 'reason']),
    warmups: counter(
      'lspd_session_warmups_total',
      'Sessions warmed on upload, by server and result (ready, incomplete, failed, skipped: no room or already there, expired).',
      ['server', 'result'],
    ),
    recycles: counter('lspd_session_recycles_total', 'Sessions replaced for their request count or memory, by server and reason.', ['server', 'reason']),
    cache: tallied('lspd_cache_requests_total', 'Result cache lookups.', ['result']),
    diffs: counter('lspd_diff_requests_total', 'POST /v1/diff answers, computed or from the diff cache.', ['result']),
    uploadBytes: counter('lspd_upload_bytes_total', 'Bytes of tree uploads received.'),
    uploadSeconds: histogram('lspd_upload_seconds', 'Tree upload duration by result.', ['result'], [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300]),
    fetchSeconds: histogram(
      'lspd_fetch_seconds',
      'Dependency fetch duration by ecosystem and result.',
      ['ecosystem', 'result'],
      [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900],
    ),
    canary: gauge('lspd_jail_canary', '1 when the boot canary proved the phase, else 0.', ['phase']),
    rootsBytes: gauge('lspd_store_roots_bytes', 'Disk used by stored roots and their dependency caches.'),
    roots: gauge('lspd_store_roots', 'Stored roots.'),
    evictions: counter('lspd_store_evictions_total', 'Roots evicted by the disk quota.'),
    rejected: counter('lspd_http_rejected_total', 'Requests refused for load (503 busy).', ['route']),
    // Read at scrape time: the daemon's own memory, whatever sampled it last (src/tenancy/heap-budget.ts).
    heapBytes: new Gauge({
      name: 'lspd_daemon_heap_bytes',
      help: "V8 heap in use by the daemon (used_heap_size); new uploads, diffs and tree walks are refused past LSPD_HEAP_BUDGET_FRACTION of V8's limit.",
      registers,
      collect() {
        this.set(getHeapStatistics().used_heap_size);
      },
    }),
    heapLimitBytes: new Gauge({
      name: 'lspd_daemon_heap_limit_bytes',
      help: "V8's heap limit (heap_size_limit): past it the process aborts.",
      registers,
      collect() {
        this.set(getHeapStatistics().heap_size_limit);
      },
    }),
    heapRefusals: counter(
      'lspd_daemon_heap_refusals_total',
      "Work refused (503 busy) while the daemon's heap was past its budget, by work: upload, diff, walk.",
      ['work'],
    ),
    // Per org: every `org` label goes through `orgLabels.of` (or `fold` for gauges),
    // so the label set stays bounded by metricsMaxOrgs (+ OTHER_ORG).
    orgLabels: new OrgLabels(config?.metricsMaxOrgs ?? configSchema.shape.metricsMaxOrgs.parse(undefined)),
    orgQueries: tallied('lspd_org_queries_total', 'LSP queries received, by org.', ['org']),
    orgRefusals: counter('lspd_org_refusals_total', 'Work refused for an org past its share or a full pool (503 busy), by org and resource.', [
      'org',
      'reason',
    ]),
    orgSessions: gauge('lspd_org_sessions', 'Live language-server sessions, by org.', ['org']),
    orgDiskBytes: gauge('lspd_org_disk_bytes', "Disk used by an org's roots, their dependency caches and its package store.", ['org']),
    // The org's package store (src/fetch/package-store.ts): ecosystem `npm` counts
    // tarballs by lockfile integrity, `python` wheels by sha256, `composer` dists by
    // shasum, `go` download-cache files by go.sum hash, `files` the extracted files of
    // every ecosystem.
    fetchStoreBytes: gauge(
      'lspd_fetch_store_bytes',
      "Disk held by an org's package store, by org and ecosystem (npm, python, composer: archives; go: module zips, go.mod and .info files; files: extracted files).",
      ['org', 'ecosystem'],
    ),
    fetchStoreHits: counter(
      'lspd_fetch_store_hits_total',
      "Packages (npm, python, composer), Go download-cache files (go) or files (files) a fetch took from the org's package store instead of the registry or its own copy.",
      ['org', 'ecosystem'],
    ),
    fetchStoreMisses: counter(
      'lspd_fetch_store_misses_total',
      "Packages (npm, python, composer), Go download-cache files (go) or files (files) a fetch brought that the org's package store did not hold (verified, then stored).",
      ['org', 'ecosystem'],
    ),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
