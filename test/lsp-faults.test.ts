// Misbehaving language servers (small fakes from test/fixtures/fake-servers, run in
// the real SERVE jail, registered as table rows the way any server is): one never
// answers initialize, one stops reading stdin, one crashes mid-request, one
// announces a 1 GiB frame, one floods notifications, one prints garbage. Each must
// end in a clear error within the query deadline, leave no process behind, and the
// next query on a healthy root (real pyright) must still answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Language } from '../src/languages.js';
import type { ServerRow } from '../src/lsp/servers/server-row.js';
import {
  cannotJail,
  fixturesDir,
  jailedPids,
  lspQuery,
  position,
  realRows,
  shaOf,
  startLspd,
  uploadDir,
  uploadFixture,
  waitFor,
  type Lspd,
} from './helpers/lsp-harness.js';

const skip = cannotJail();
const FAKES_AT = '/opt/fakes';
const QUERY_TIMEOUT_MS = 5000;
const INIT_TIMEOUT_MS = 3000;

/** A table row for a fake: the same shape as the real ones, bound read-only into the jail. */
function fakeRow(name: string, script: string, language: Language): ServerRow {
  return {
    name,
    languages: [language],
    argv: ['/usr/bin/node', `${FAKES_AT}/${script}`],
    env: {},
    binds: [{ host: join(fixturesDir, 'fake-servers'), at: FAKES_AT }],
    rootMarkers: [],
    readiness: { kind: 'progress' },
    encodings: ['utf-16'],
    maxInFlight: 8,
    probe: async () => ({ available: true, version: 'fake' }),
  };
}

// Each fake claims a language no real row of this table serves, so one daemon holds them all.
const FAKES: { row: ServerRow; file: string }[] = [
  { row: fakeRow('fake-never-init', 'never-init.mjs', 'go'), file: 'main.go' },
  { row: fakeRow('fake-stop-reading', 'stop-reading.mjs', 'rust'), file: 'big.rs' },
  { row: fakeRow('fake-crash', 'crash-mid-request.mjs', 'c'), file: 'crash.c' },
  { row: fakeRow('fake-huge-frame', 'huge-frame.mjs', 'cpp'), file: 'huge.cpp' },
  { row: fakeRow('fake-flood', 'flood.mjs', 'php'), file: 'flood.php' },
  { row: fakeRow('fake-garbage', 'garbage.mjs', 'shell'), file: 'garbage.sh' },
  { row: fakeRow('fake-silent', 'silent.mjs', 'java'), file: 'Silent.java' },
];

const faultRoot = { org: 'acme', repo: 'faults', sha: shaOf('faults') };
const pyRoot = { org: 'acme', repo: 'py-basic', sha: shaOf('py-basic-faults') };

describe('faulty servers end in clear errors, leak nothing, and do not hurt a healthy root', { skip }, () => {
  let d: Lspd;
  let tree: string;
  before(async () => {
    const pyright = realRows().filter((r) => r.name === 'pyright');
    d = await startLspd({
      rows: [...pyright, ...FAKES.map((f) => f.row)],
      env: {
        LSPD_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        LSPD_CLEANUP_RESERVE_MS: '500',
        LSPD_INITIALIZE_TIMEOUT_MS: String(INIT_TIMEOUT_MS),
        LSPD_SHUTDOWN_TIMEOUT_MS: '500',
        LSPD_DIAGNOSTICS_WINDOW_MS: '500',
      },
    });
    tree = mkdtempSync(join(tmpdir(), 'lspd-faults-'));
    chmodSync(tree, 0o755);
    for (const f of FAKES) writeFileSync(join(tree, f.file), 'hello\n');
    // Bigger than a pipe buffer: the didOpen write to a server that stopped reading blocks.
    writeFileSync(join(tree, 'big.rs'), '// filler\n'.repeat(40_000));
    await uploadDir(d.url, faultRoot, tree);
    await uploadFixture(d.url, pyRoot, 'py-basic');
    // Warm the healthy root, so "still answers" measures the fault, not pyright's cold
    // start (which can pass this test's short deadline on a loaded machine).
    // A cold pyright can even miss this test's short initialize deadline: then it is
    // retried after its back-off, as any caller would.
    const until = Date.now() + 120_000;
    while (Date.now() < until) {
      const r = await lspQuery(d.url, { ...pyRoot, op: 'hover', path: 'pkg/app.py', ...position('py-basic', 'pkg/app.py', 'greet("world")') });
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 1000 * (typeof r.body.retry_after === 'number' ? r.body.retry_after : 1)));
    }
    await healthy();
  });
  after(async () => {
    await d?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  async function healthy(): Promise<void> {
    const r = await lspQuery(d.url, { ...pyRoot, op: 'hover', path: 'pkg/app.py', ...position('py-basic', 'pkg/app.py', 'greet("world")') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(String(r.body.contents), /def greet/);
  }

  /** A definition on the fake that stopped reading, posted as a client would; it hangs until `hangUp` aborts it. */
  function queryStopReading(): { hangUp(): Promise<void> } {
    const ac = new AbortController();
    const q = fetch(`${d.url}/v1/code/lsp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...faultRoot, op: 'definition', path: 'big.rs', line: 0, character: 0 }),
      signal: ac.signal,
    }).catch(() => undefined);
    return {
      async hangUp() {
        ac.abort();
        await q;
      },
    };
  }

  /** Query the fake's file; assert the error and the time it took; wait for its processes to be gone. */
  async function fault(file: string, status: number, code: string, message: RegExp, killWithinMs = 3000): Promise<Record<string, unknown>> {
    const before = new Set(jailedPids(d));
    const t0 = Date.now();
    const r = await lspQuery(d.url, { ...faultRoot, op: 'definition', path: file, line: 0, character: 0 });
    const took = Date.now() - t0;
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.equal(r.body.error, code);
    assert.match(String(r.body.message), message);
    assert.ok(took <= QUERY_TIMEOUT_MS + 250, `answered in ${took} ms, past the ${QUERY_TIMEOUT_MS} ms deadline`);
    // No leaked process: everything the fake started is gone within the cleanup reserve (and a margin).
    const gone = await waitFor(() => jailedPids(d).every((p) => before.has(p) || !isFake(p)), killWithinMs);
    assert.ok(
      gone,
      `processes left: ${jailedPids(d)
        .filter((p) => !before.has(p))
        .join(', ')}`,
    );
    await healthy();
    return r.body;
  }

  test('never answers initialize: 503 server_unavailable after the initialize deadline; back-off, then a retry', async () => {
    const body = await fault('main.go', 503, 'server_unavailable', /fake-never-init failed to start: .*did not answer initialize within 3000 ms/);
    assert.equal(typeof body.retry_after, 'number');
    // within the back-off: refused at once, saying when to retry
    const t0 = Date.now();
    const again = await lspQuery(d.url, { ...faultRoot, op: 'definition', path: 'main.go', line: 0, character: 0 });
    assert.equal(again.status, 503);
    assert.match(String(again.body.message), /failed to start 1 time\(s\) in a row/);
    assert.ok(Date.now() - t0 < 500);
    // after it: tried again (never a permanent mark)
    const spawnsBefore = await spawnCount('fake-never-init');
    await new Promise((r) => setTimeout(r, 1100));
    const third = await lspQuery(d.url, { ...faultRoot, op: 'definition', path: 'main.go', line: 0, character: 0 });
    assert.equal(third.status, 503);
    assert.equal(await spawnCount('fake-never-init'), spawnsBefore + 1);
  });

  test('stops reading stdin: 504 timeout at the deadline; the wedged server is killed', async () => {
    // Killed once it has answered neither the request nor its cancel for another deadline.
    await fault('big.rs', 504, 'timeout', /fake-stop-reading did not answer within 5000 ms/, QUERY_TIMEOUT_MS + 3000);
  });

  test('a client that disconnects cancels its query: the lease is released long before the deadline', async () => {
    const q = queryStopReading();
    const held = () =>
      d.lsp.pool
        .list()
        .filter((s) => s.row.name === 'fake-stop-reading')
        .reduce((n, s) => n + s.leases, 0);
    assert.ok(await waitFor(() => held() === 1, 3000), 'the query holds the session');
    const t0 = Date.now();
    await q.hangUp();
    assert.ok(await waitFor(() => held() === 0, 1000), 'released after the disconnect');
    assert.ok(Date.now() - t0 < QUERY_TIMEOUT_MS / 2);
    await healthy();
  });

  test('a server that never publishes diagnostics: incomplete, never a bare empty list', async () => {
    const r = await lspQuery(d.url, { ...faultRoot, op: 'diagnostics', path: 'Silent.java' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.incomplete, true);
    assert.deepEqual(r.body.diagnostics, []);
    // and an incomplete answer is not cached: asked again, it is asked again
    const again = await lspQuery(d.url, { ...faultRoot, op: 'diagnostics', path: 'Silent.java' });
    assert.equal(again.body.incomplete, true);
    assert.ok((again.body.elapsed_ms as number) >= 400, 'waited the window again');
  });

  test('crashes mid-request: 503 naming the exit, with its stderr tail', async () => {
    const body = await fault('crash.c', 503, 'server_unavailable', /fake-crash failed while answering: .*(exited|closed its output)/);
    assert.match(String(body.server_stderr ?? ''), /crashing on purpose/);
    // the next query on the same file gets a fresh server (which crashes again, cleanly)
    await fault('crash.c', 503, 'server_unavailable', /fake-crash failed while answering/);
  });

  test('announces a 1 GiB frame: refused from the header, 503 protocol violation', async () => {
    await fault('huge.cpp', 503, 'server_unavailable', /broke the LSP framing: .*1073741824-byte frame, over the 16777216-byte limit/);
  });

  test('floods notifications: 503 once the per-request budget is spent', async () => {
    await fault('flood.php', 503, 'server_unavailable', /sent more than 64 messages while one request waited/);
  });

  test('prints garbage on stdout: 503 protocol violation', async () => {
    await fault('garbage.sh', 503, 'server_unavailable', /broke the LSP framing/);
  });

  // Last: it closes the pool.
  test('shutting down a server that stopped reading is bounded: kill, close, join', async () => {
    const q = queryStopReading();
    assert.ok(await waitFor(() => d.lsp.pool.list().some((s) => s.row.name === 'fake-stop-reading' && s.state.kind === 'ready'), 3000));
    await q.hangUp();
    const t0 = Date.now();
    await d.lsp.pool.close();
    const took = Date.now() - t0;
    // shutdownTimeoutMs is 500 here: the shutdown request cannot even be read, so it is killed.
    assert.ok(took < 500 + 1500, `close took ${took} ms`);
    assert.ok(await waitFor(() => jailedPids(d).length === 0, 2000), `left: ${jailedPids(d).join(', ')}`);
  });

  async function spawnCount(server: string): Promise<number> {
    const m = await d.metrics.spawns.get();
    return m.values.find((v) => v.labels.server === server)?.value ?? 0;
  }

  /** Is host pid p one of the fakes (node running a script under /opt/fakes)? */
  function isFake(p: number): boolean {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(FAKES_AT);
    } catch {
      return false;
    }
  }
});
