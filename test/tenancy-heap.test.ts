// The daemon's own memory budget (issue 30): past LSPD_HEAP_BUDGET_FRACTION of V8's
// heap limit, new uploads, diffs and tree walks are refused with 503 busy and
// Retry-After, counted by work in /metrics, while queries that need no new memory
// (a position query, a file read, GET of a root, an upload of a root already
// stored) still answer. A first daemon stores two roots of c-basic; a second one on
// the same data dir runs with a budget the heap is already past (a fraction of
// 0.001: a few MiB of a limit of GiBs), so every admission check sees it over.
// Real clangd in the real SERVE jail answers the query that is still served.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { CLANGD } from '../src/lsp/servers/rows/c.js';
import { lacksBinaries } from './helpers/host.js';
import { cannotJail, fixturesDir, getJson, lineOf, lspQuery, position, shaOf, startLspd, tarOf, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail() ?? lacksBinaries('clangd', CLANGD);
const C = 'c-basic';
const org = 'acme';
const repo = 'heap-c';
const base = { org, repo, sha: shaOf('heap-base') };
const head = { org, repo, sha: shaOf('heap-head') };

type Loc = { path: string; range: { start: { line: number } } };

async function tarBytes(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of tarOf(dir)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** One sample's value from Prometheus text, or undefined. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a memory budget the daemon enforces on itself', { skip }, () => {
  let dataDir: string;
  let scratch: string;
  let d: Lspd;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'lspd-heap-'));
    chmodSync(dataDir, 0o755);
    scratch = mkdtempSync(join(tmpdir(), 'lspd-heap-tree-'));
    const baseDir = join(scratch, 'base');
    const headDir = join(scratch, 'head');
    cpSync(join(fixturesDir, C), baseDir, { recursive: true });
    cpSync(join(fixturesDir, C), headDir, { recursive: true });
    writeFileSync(join(headDir, 'src', 'extra.c'), 'int extra(void) { return 7; }\n');
    // Stored under the default budget, which a test process is far under.
    const first = await startLspd({ dataDir });
    try {
      await uploadDir(first.url, base, baseDir, '?warm=false');
      await uploadDir(first.url, head, headDir, '?warm=false');
      assert.deepEqual((await first.metrics.heapRefusals.get()).values, [], 'nothing refused under the default budget');
    } finally {
      await first.close();
    }
    d = await startLspd({ dataDir, env: { LSPD_HEAP_BUDGET_FRACTION: '0.001' } });
  });
  after(async () => {
    await d?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const assertBusy = (status: number, retryAfter: string | null, body: Record<string, unknown>, what: RegExp) => {
    assert.equal(status, 503, JSON.stringify(body));
    assert.equal(body.error, 'busy');
    assert.equal(body.retry_after, 5);
    assert.equal(retryAfter, '5');
    assert.match(String(body.message), /LSPD_HEAP_BUDGET_FRACTION/);
    assert.match(String(body.message), what);
  };

  test('past the budget: a new upload, a diff and a tree walk are 503 busy with Retry-After', async () => {
    const fresh = { org, repo, sha: shaOf('heap-refused') };
    const put = await fetch(`${d.url}/v1/roots/${org}/${repo}/${fresh.sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: await tarBytes(join(fixturesDir, C)),
    });
    assertBusy(put.status, put.headers.get('retry-after'), (await put.json()) as Record<string, unknown>, /new uploads/);
    assert.equal((await getJson(d.url, `/v1/roots/${org}/${repo}/${fresh.sha}`)).status, 404, 'nothing was stored');

    const diff = await fetch(`${d.url}/v1/diff`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ org, repo, base: base.sha, head: head.sha }),
    });
    assertBusy(diff.status, diff.headers.get('retry-after'), (await diff.json()) as Record<string, unknown>, /new diffs/);

    // `puts` is declared nowhere in the tree: /ask looks for a use of it by walking the tree's files.
    const ask = await fetch(`${d.url}/ask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...base, symbol: 'puts' }),
    });
    assertBusy(ask.status, ask.headers.get('retry-after'), (await ask.json()) as Record<string, unknown>, /new tree walks/);
  });

  test('past the budget: queries, file reads, GET and an upload of a stored root still answer', async () => {
    const call = position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")');
    const def = await lspQuery(d.url, { ...base, op: 'definition', path: 'src/main.c', ...call });
    assert.equal(def.status, 200, JSON.stringify(def.body));
    assert.deepEqual(
      (def.body.locations as Loc[]).map((l) => `${l.path}:${l.range.start.line}`),
      [`src/greet.c:${lineOf(C, 'src/greet.c', 'int greet(')}`],
    );

    const file = await getJson(d.url, `/v1/roots/${org}/${repo}/${head.sha}/files/src/extra.c`);
    assert.equal(file.status, 200, JSON.stringify(file.body));
    assert.equal(file.body.text, 'int extra(void) { return 7; }\n');
    assert.equal((await getJson(d.url, `/v1/roots/${org}/${repo}/${base.sha}`)).status, 200);

    // The same key again stores nothing new: admitted, answered from what is stored.
    const again = await fetch(`${d.url}/v1/roots/${org}/${repo}/${base.sha}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/x-tar' },
      body: await tarBytes(join(fixturesDir, C)),
    });
    assert.equal(again.status, 200, await again.clone().text());
    assert.equal(((await again.json()) as { created: boolean }).created, false);
  });

  test('/metrics: the heap, its limit, and each refusal by work and by org', async () => {
    const text = await (await fetch(`${d.url}/metrics`)).text();
    const heap = sample(text, 'lspd_daemon_heap_bytes');
    const limit = sample(text, 'lspd_daemon_heap_limit_bytes');
    assert.ok(heap !== undefined && heap > 0.001 * limit!, `heap ${heap} is past the budget of a 0.001 fraction`);
    assert.equal(limit, getHeapStatistics().heap_size_limit);
    for (const work of ['upload', 'diff', 'walk']) assert.equal(sample(text, 'lspd_daemon_heap_refusals_total', `{work="${work}"}`), 1, work);
    assert.equal(sample(text, 'lspd_org_refusals_total', `{org="${org}",reason="heap"}`), 3);
  });
});
