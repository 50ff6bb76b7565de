// An in-process lspd for the LSP tests: the real store, the real jail (canary and
// all), the real pool and query service behind the real HTTP server on port 0.
// In-process (not a child daemon) so a test can hand the server table its own rows
// (the fault fakes) and look at the pool, with no test-only code in src/.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { Metrics } from '../../src/metrics.js';
import { defaultServerPaths, type ServerRow } from '../../src/lsp/servers/server-row.js';
import { defaultServerRows } from '../../src/lsp/servers/server-table.js';
import type { RootStore } from '../../src/store/store.js';
import type { JailRuntime } from '../../src/jail/jail.js';
import type { Lsp } from '../../src/lsp/create-lsp.js';
import type { FetchManager } from '../../src/fetch/fetch-manager.js';
import { startDaemon } from '../../src/daemon.js';
import { jailUids } from './uids.js';
import { getJson, postJson, shaOf, tarOf, upload } from './ask-harness.js';
import { pidsOfUids, waitFor } from '../fixtures/jail/harness.js';

export { cannotJail } from './host.js';
export { getJson, postJson, pidsOfUids, shaOf, tarOf, upload, waitFor };

export const projectDir = resolve(import.meta.dirname, '..', '..');
export const fixturesDir = join(projectDir, 'test', 'fixtures');

export interface Lspd {
  url: string;
  config: Config;
  metrics: Metrics;
  lsp: Lsp;
  jail: JailRuntime;
  store: RootStore;
  /** The FETCH phase, wired as main.ts wires it. */
  fetcher: FetchManager;
  app: FastifyInstance;
  /** First host uid of this daemon's jail pool (config.jailUidCount uids): every jailed process runs as one. */
  uidBase: number;
  close(): Promise<void>;
}

/**
 * Start it. `env` overrides config (LSPD_<NAME> variables, as an operator would);
 * `rows` replaces the server table (default: the real one); `dataDir` reuses a
 * data dir (kept on close), else a fresh one is made and removed.
 */
export async function startLspd(opts: { env?: Record<string, string>; rows?: ServerRow[]; dataDir?: string } = {}): Promise<Lspd> {
  // A given data dir is the caller's (a restart test starts a second daemon on it): close() keeps it.
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'lspd-lsp-'));
  chmodSync(dataDir, 0o755);
  const uids = jailUids(64);
  const config = loadConfig({
    LSPD_DATA: dataDir,
    LSPD_LISTEN: '127.0.0.1:0',
    LSPD_JAIL_UID_BASE: String(uids.base),
    LSPD_JAIL_UID_COUNT: String(uids.count),
    // Off unless a test asks (as in daemon.ts): pool tests count spawns after uploads.
    LSPD_WARM_MAX_SESSIONS: '0',
    ...opts.env,
  });
  const d = await startDaemon(config, createLogger(process.env.LSPD_TEST_LOG ?? 'silent'), opts.rows ? { rows: opts.rows } : {});
  if (!d.health.jailReady) {
    await d.close();
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`jail canary failed: ${d.health.reason}`);
  }
  const uidBase = config.jailUidBase;
  return {
    url: d.address,
    config,
    metrics: d.metrics,
    lsp: d.lsp,
    jail: d.jail,
    store: d.store,
    fetcher: d.fetcher,
    app: d.app,
    uidBase,
    close: async () => {
      await d.close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real rows. */
export function realRows(): ServerRow[] {
  return defaultServerRows(defaultServerPaths());
}

/** Zero-based position of the first `needle` in a fixture file (+ offset into it). */
export function position(fixture: string, path: string, needle: string, offset = 0): { line: number; character: number } {
  return positionIn(join(fixturesDir, fixture), path, needle, offset);
}

/** The same in a file of any directory (a tree a test built). */
export function positionIn(dir: string, path: string, needle: string, offset = 0): { line: number; character: number } {
  const text = readFileSync(join(dir, path), 'utf8');
  const i = text.indexOf(needle);
  if (i < 0) throw new Error(`${JSON.stringify(needle)} not in ${path}`);
  const before = text.slice(0, i + offset).split('\n');
  return { line: before.length - 1, character: before[before.length - 1]!.length };
}

/** The zero-based line holding the first `needle`. */
export function lineOf(fixture: string, path: string, needle: string): number {
  return position(fixture, path, needle).line;
}

/** Upload a fixture through PUT and assert it was stored. */
export async function uploadFixture(url: string, root: { org: string; repo: string; sha: string }, fixture: string): Promise<void> {
  const r = await upload(url, root, fixture);
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload of ${fixture} answered ${r.status}: ${await r.text()}`);
  await r.arrayBuffer().catch(() => undefined);
}

/** POST /v1/code/lsp. */
export async function lspQuery(url: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  return postJson(url, '/v1/code/lsp', body);
}

/** Upload a directory (not a fixture name) through PUT; `query` e.g. `?warm=false`. */
export async function uploadDir(url: string, root: { org: string; repo: string; sha: string }, dir: string, query = ''): Promise<void> {
  const body = tarOf(dir);
  const r = await fetch(`${url}/v1/roots/${root.org}/${root.repo}/${root.sha}${query}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar' },
    body: Readable.toWeb(body) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload answered ${r.status}: ${await r.text()}`);
}

/** Host pids of this daemon's jailed processes. */
export function jailedPids(d: Lspd): number[] {
  return pidsOfUids(d.uidBase, d.config.jailUidCount);
}

/** GET the root until its fetch has settled (done/failed/refused/none); its `fetch` view. */
export async function fetchSettled(
  url: string,
  root: { org: string; repo: string; sha: string },
  timeoutMs = 90_000,
): Promise<{ state: string; error?: string; log?: string }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await getJson(url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`);
    const f = r.body.fetch as { state: string };
    if (!['queued', 'running'].includes(f.state) || Date.now() > until) return f;
    await new Promise((res) => setTimeout(res, 100));
  }
}
