// Question: is the API surface the same after a refactor? Not a timing: it prints, as
// one JSON document, what a real in-process daemon serves at GET /docs/json and
// GET /docs, and its metrics registry (every metric's name, type, help and label
// names; counters' label sets and values) after a fixed script of requests that
// answers, refuses (need_tree, not_found, bad_request) and, on a second daemon whose
// heap budget is ~0, refuses busy on every route the budget guards. Diff two runs:
//   node --import tsx bench/api-surface.ts > before.json   (on the old commit)
//   node --import tsx bench/api-surface.ts > after.json && diff before.json after.json
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { startLspd, type Lspd } from '../test/helpers/daemon.js';

const ROOT = { org: 'acme', repo: 'web', sha: 'a'.repeat(40) };
const MISSING = { org: 'acme', repo: 'web', sha: 'b'.repeat(40) };
const PATCH = '--- a/a.sh\n+++ b/a.sh\n@@ -1 +1 @@\n-x\n+y\n';

async function tar(files: Record<string, string>): Promise<Buffer> {
  const p = pack();
  for (const [name, text] of Object.entries(files)) p.entry({ name, mode: 0o644 }, text);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of Readable.from(p as AsyncIterable<Buffer>)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<number> {
  const init: RequestInit =
    body instanceof Buffer
      ? { method, body, headers: { 'content-type': 'application/x-tar' } }
      : body !== undefined
        ? { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
        : { method };
  const r = await fetch(url + path, init);
  await r.arrayBuffer();
  return r.status;
}

/** The requests every run makes, with the status each answered (part of the output). */
async function script(url: string): Promise<Record<string, number>> {
  const k = `/v1/roots/${ROOT.org}/${ROOT.repo}/${ROOT.sha}`;
  const out: Record<string, number> = {};
  const say = async (what: string, s: Promise<number>) => void (out[what] = await s);
  await say('put', call(url, 'PUT', `${k}?warm=false`, await tar({ 'a.sh': 'f() { echo hi; }\nf\n' })));
  await say('get root', call(url, 'GET', k));
  await say('list', call(url, 'GET', '/v1/roots'));
  await say('read file', call(url, 'GET', `${k}/files/a.sh`));
  await say('read missing root', call(url, 'GET', `/v1/roots/${MISSING.org}/${MISSING.repo}/${MISSING.sha}/files/a.sh`));
  await say('lsp need_tree', call(url, 'POST', '/v1/code/lsp', { ...MISSING, op: 'hover', path: 'a.sh', line: 0, character: 0 }));
  await say('lsp bad', call(url, 'POST', '/v1/code/lsp', { ...ROOT, op: 'nope' }));
  await say('ask need_tree', call(url, 'POST', '/ask', { ...MISSING, symbol: 'f' }));
  await say('diff need_tree', call(url, 'POST', '/v1/diff', { org: ROOT.org, repo: ROOT.repo, base: ROOT.sha, head: MISSING.sha }));
  await say('check need_tree', call(url, 'POST', '/v1/check', { ...MISSING, patch: PATCH }));
  await say('tools', call(url, 'GET', '/v1/tools'));
  await say('livez', call(url, 'GET', '/livez'));
  await say('readyz', call(url, 'GET', '/readyz'));
  await say('mcp get', call(url, 'GET', '/mcp'));
  return out;
}

/** The heap-budget refusals: a budget of ~0 refuses every upload, diff, walk and check. */
async function refusals(url: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  out['put busy'] = await call(url, 'PUT', `/v1/roots/${ROOT.org}/${ROOT.repo}/${ROOT.sha}`, await tar({ 'a.sh': 'x\n' }));
  out['diff busy'] = await call(url, 'POST', '/v1/diff', { org: ROOT.org, repo: ROOT.repo, base: ROOT.sha, head: MISSING.sha });
  out['check busy'] = await call(url, 'POST', '/v1/check', { ...MISSING, patch: PATCH });
  return out;
}

async function registry(d: Lspd): Promise<unknown[]> {
  const metrics = await d.metrics.registry.getMetricsAsJSON();
  return metrics
    .filter((m) => m.name.startsWith('lspd_'))
    .map((m) => {
      const labelNames = (d.metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
      const base = { name: m.name, type: m.type, help: m.help, labelNames };
      if (String(m.type) !== 'counter') return base;
      const values = m.values
        .map((v) => ({ labels: v.labels, value: v.value }))
        .filter((v) => v.value > 0)
        .sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)));
      return { ...base, values };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

const a = await startLspd();
const b = await startLspd({ env: { LSPD_HEAP_BUDGET_FRACTION: '0.0001' } });
try {
  const docs = await (await fetch(a.url + '/docs/json')).json();
  const html = await (await fetch(a.url + '/docs')).text();
  const statuses = await script(a.url);
  const refused = await refusals(b.url);
  // Which route each request was timed under: the label set of the latency histogram.
  const timed = (await a.metrics.registry.getSingleMetricAsString('lspd_http_request_seconds'))
    .split('\n')
    .filter((l) => l.startsWith('lspd_http_request_seconds_count'))
    .map((l) => l.replace(/ \d+(\.\d+)?$/, ''))
    .sort();
  const out = { docs, docsHtml: html, statuses, refused, registry: await registry(a), refusedRegistry: await registry(b), timed };
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
} finally {
  await a.close();
  await b.close();
}
