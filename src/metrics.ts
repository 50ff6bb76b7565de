// Every Prometheus metric lspd exports, declared once on a registry that is
// passed in (no global default registry, so tests can run several daemons).
// Names follow lspd_<area>_<thing>_{total,seconds,bytes}.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { configSchema, type Config } from './config.js';
import { OrgLabels } from './org-labels.js';

export function createMetrics(config?: Pick<Config, 'metricsMaxOrgs'>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  return {
    registry,
    httpSeconds: new Histogram({
      name: 'lspd_http_request_seconds',
      help: 'HTTP request latency by route, op, server and status.',
      labelNames: ['route', 'op', 'server', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 70],
      registers: r,
    }),
    sessions: new Gauge({
      name: 'lspd_sessions',
      help: 'Language-server sessions by server and state.',
      labelNames: ['server', 'state'] as const,
      registers: r,
    }),
    spawns: new Counter({ name: 'lspd_session_spawns_total', help: 'Language-server spawns.', labelNames: ['server'] as const, registers: r }),
    crashes: new Counter({ name: 'lspd_session_crashes_total', help: 'Language servers that exited unasked.', labelNames: ['server'] as const, registers: r }),
    restarts: new Counter({
      name: 'lspd_session_restarts_total',
      help: 'Sessions restarted (crash, wedge, fetch done).',
      labelNames: ['server', 'reason'] as const,
      registers: r,
    }),
    warmups: new Counter({
      name: 'lspd_session_warmups_total',
      help: 'Sessions warmed on upload, by server and result (ready, incomplete, failed, skipped: no room or already there, expired).',
      labelNames: ['server', 'result'] as const,
      registers: r,
    }),
    recycles: new Counter({
      name: 'lspd_session_recycles_total',
      help: 'Sessions replaced for their request count or memory, by server and reason.',
      labelNames: ['server', 'reason'] as const,
      registers: r,
    }),
    cache: new Counter({ name: 'lspd_cache_requests_total', help: 'Result cache lookups.', labelNames: ['result'] as const, registers: r }),
    diffs: new Counter({
      name: 'lspd_diff_requests_total',
      help: 'POST /v1/diff answers, computed or from the diff cache.',
      labelNames: ['result'] as const,
      registers: r,
    }),
    uploadBytes: new Counter({ name: 'lspd_upload_bytes_total', help: 'Bytes of tree uploads received.', registers: r }),
    uploadSeconds: new Histogram({
      name: 'lspd_upload_seconds',
      help: 'Tree upload duration by result.',
      labelNames: ['result'] as const,
      buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers: r,
    }),
    fetchSeconds: new Histogram({
      name: 'lspd_fetch_seconds',
      help: 'Dependency fetch duration by ecosystem and result.',
      labelNames: ['ecosystem', 'result'] as const,
      buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900],
      registers: r,
    }),
    canary: new Gauge({ name: 'lspd_jail_canary', help: '1 when the boot canary proved the phase, else 0.', labelNames: ['phase'] as const, registers: r }),
    rootsBytes: new Gauge({ name: 'lspd_store_roots_bytes', help: 'Disk used by stored roots and their dependency caches.', registers: r }),
    roots: new Gauge({ name: 'lspd_store_roots', help: 'Stored roots.', registers: r }),
    evictions: new Counter({ name: 'lspd_store_evictions_total', help: 'Roots evicted by the disk quota.', registers: r }),
    rejected: new Counter({ name: 'lspd_http_rejected_total', help: 'Requests refused for load (503 busy).', labelNames: ['route'] as const, registers: r }),
    // Per org: every `org` label goes through `orgLabels.of` (or `fold` for gauges),
    // so the label set stays bounded by metricsMaxOrgs (+ OTHER_ORG).
    orgLabels: new OrgLabels(config?.metricsMaxOrgs ?? configSchema.shape.metricsMaxOrgs.parse(undefined)),
    orgQueries: new Counter({ name: 'lspd_org_queries_total', help: 'LSP queries received, by org.', labelNames: ['org'] as const, registers: r }),
    orgRefusals: new Counter({
      name: 'lspd_org_refusals_total',
      help: 'Work refused for an org past its share or a full pool (503 busy), by org and resource.',
      labelNames: ['org', 'reason'] as const,
      registers: r,
    }),
    orgSessions: new Gauge({ name: 'lspd_org_sessions', help: 'Live language-server sessions, by org.', labelNames: ['org'] as const, registers: r }),
    orgDiskBytes: new Gauge({
      name: 'lspd_org_disk_bytes',
      help: "Disk used by an org's roots and their dependency caches.",
      labelNames: ['org'] as const,
      registers: r,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
