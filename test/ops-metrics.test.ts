// /metrics of a real daemon after a few requests: every metric src/metrics.ts
// declares is exported under its name and type, the request histogram carries
// route/op/server/status labels for the routes just called, upload bytes and
// store gauges moved, the canary reports both phases, and Node's default process
// metrics are there.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics } from '../src/metrics.js';
import { spawnDaemon, type Daemon } from './helpers/daemon.js';
import { SHA1, makeTar } from './helpers/ops.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text exposition → TYPE per family and every sample. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) types.set(t[1]!, t[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

describe('metrics', () => {
  let d: Daemon;
  let types: Map<string, string>;
  let samples: Sample[];
  let tarBytes: number;

  before(async () => {
    d = await spawnDaemon();
    const tar = await makeTar({ 'src/a.ts': 'export const a = 1;\n', 'main.go': 'package main\n' });
    tarBytes = tar.length;
    await (await fetch(`${d.url}/livez`)).text();
    await (await fetch(`${d.url}/readyz`)).text();
    const put = await fetch(`${d.url}/v1/roots/acme/api/${SHA1}`, { method: 'PUT', headers: { 'content-type': 'application/x-tar' }, body: tar });
    assert.equal(put.status, 201);
    await put.text();
    await (await fetch(`${d.url}/v1/roots/acme/api/${SHA1}`)).text();
    await (await fetch(`${d.url}/v1/roots/acme/nope/${SHA1}`)).text();
    const q = await fetch(`${d.url}/v1/code/lsp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ org: 'acme', repo: 'never', sha: SHA1, op: 'definition', path: 'a.ts', line: 0, character: 0 }),
    });
    await q.text();
    const r = await fetch(`${d.url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    ({ types, samples } = parseExposition(await r.text()));
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('exports every declared metric under its name and type', async () => {
    const declared = createMetrics();
    for (const m of await declared.registry.getMetricsAsJSON()) {
      if (!m.name.startsWith('lspd_')) continue;
      assert.match(m.name, /^lspd_[a-z]+_[a-z_]+$|^lspd_sessions$/, `${m.name}: lspd_<area>_<thing>`);
      assert.equal(types.get(m.name), String(m.type), `${m.name} exported as ${String(m.type)}`);
    }
    for (const name of [
      'lspd_http_request_seconds',
      'lspd_sessions',
      'lspd_session_spawns_total',
      'lspd_session_crashes_total',
      'lspd_session_restarts_total',
      'lspd_cache_requests_total',
      'lspd_upload_bytes_total',
      'lspd_upload_seconds',
      'lspd_fetch_seconds',
      'lspd_jail_canary',
      'lspd_store_roots_bytes',
      'lspd_store_roots',
      'lspd_store_evictions_total',
    ]) {
      assert.ok(types.has(name), `${name} missing`);
    }
  });

  it('labels request latency by route, op, server and status', () => {
    const counts = samples.filter((s) => s.name === 'lspd_http_request_seconds_count');
    for (const s of counts) assert.deepEqual(Object.keys(s.labels).sort(), ['op', 'route', 'server', 'status']);
    const find = (route: string, status: string) => counts.find((s) => s.labels.route === route && s.labels.status === status);
    assert.ok(find('/livez', '200'), 'livez');
    assert.ok(find('/v1/roots/:org/:repo/:sha', '201'), 'upload, by route pattern (not by URL: bounded cardinality)');
    assert.ok(find('/v1/roots/:org/:repo/:sha', '200'), 'get root');
    assert.ok(find('/v1/roots/:org/:repo/:sha', '404'), 'missing root');
    const lsp = counts.find((s) => s.labels.route === '/v1/code/lsp');
    assert.ok(lsp, 'query route');
    assert.equal(lsp.labels.op, 'definition', 'op label of a query');
    assert.ok(!counts.some((s) => s.labels.route?.includes(SHA1)), 'no raw URLs as labels');
    const buckets = samples.filter((s) => s.name === 'lspd_http_request_seconds_bucket' && s.labels.route === '/livez');
    assert.ok(buckets.some((b) => b.labels.le === '+Inf'));
  });

  it('counts upload bytes and stored roots, and reports the canary per phase', () => {
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    assert.ok((value('lspd_upload_bytes_total') ?? 0) >= tarBytes * 0.5, 'upload bytes counted');
    assert.equal(value('lspd_upload_seconds_count', { result: 'created' }) ?? value('lspd_upload_seconds_count'), 1);
    assert.equal(value('lspd_store_roots'), 1);
    assert.ok((value('lspd_store_roots_bytes') ?? 0) > 0);
    for (const phase of ['serve', 'fetch']) {
      const v = value('lspd_jail_canary', { phase });
      assert.ok(v === 0 || v === 1, `lspd_jail_canary{phase="${phase}"} is ${v}`);
    }
  });

  it('includes the default Node process metrics', () => {
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(types.has(name), `${name} missing`);
    }
  });
});

describe('tallied counters', () => {
  it('count in plain numbers and show every count, under its labels, at each read (scrape or get)', async () => {
    const m = createMetrics();
    const hit = m.cache.tally({ result: 'hit' });
    const again = m.cache.tally({ result: 'hit' });
    const miss = m.cache.tally({ result: 'miss' });
    hit.inc();
    again.inc();
    miss.inc();
    const first = await m.registry.metrics();
    assert.match(first, /^lspd_cache_requests_total\{result="hit"\} 2$/m);
    assert.match(first, /^lspd_cache_requests_total\{result="miss"\} 1$/m);
    hit.inc();
    assert.equal((await m.cache.get()).values.find((v) => v.labels.result === 'hit')?.value, 3);
    assert.match(await m.registry.metrics(), /^lspd_cache_requests_total\{result="hit"\} 3$/m, 'a read hands over what was counted once');
    m.orgQueries.tally({ org: 'acme' }).inc();
    assert.match(await m.registry.metrics(), /^lspd_org_queries_total\{org="acme"\} 1$/m);
  });
});
