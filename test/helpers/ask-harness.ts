// Shared set-up of the /ask, /v1/tools and /mcp tests: a real lspd (child process,
// real jail, real pool), fixture trees uploaded through the real PUT route as tar
// streams, JSON helpers, and positions found by text (never hard-coded numbers).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { spawnDaemon, projectDir, type Daemon } from './daemon.js';
import { cannotJail } from '../fixtures/jail/harness.js';
import { jailUidEnv } from './uids.js';

export const fixturesDir = join(projectDir, 'test', 'fixtures');

export interface Root {
  org: string;
  repo: string;
  sha: string;
}

/** A sha for a fixture: any 40 hex digits name one immutable tree. */
export function shaOf(seed: string): string {
  let h = '';
  for (let i = 0; h.length < 40; i++) h += ((seed.charCodeAt(i % seed.length) * 31 + i * 7) % 256).toString(16).padStart(2, '0');
  return h.slice(0, 40);
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else if (e.isFile()) out.push(p);
  }
  return out.sort();
}

/** The fixture directory as a tar stream (tar-stream pack()), node_modules included. */
export function tarOf(dir: string): Readable {
  const p = pack();
  for (const file of walk(dir)) {
    const st = statSync(file);
    p.entry({ name: relative(dir, file), size: st.size, mode: 0o644, type: 'file' }, readFileSync(file));
  }
  p.finalize();
  // tar-stream's pack is a streamx stream; fetch wants a Node (or web) stream.
  return Readable.from(p as AsyncIterable<Buffer>);
}

export async function upload(url: string, root: Root, fixture: string, headers: Record<string, string> = {}): Promise<Response> {
  const body = tarOf(join(fixturesDir, fixture));
  return fetch(`${url}/v1/roots/${root.org}/${root.repo}/${root.sha}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar', ...headers },
    body: Readable.toWeb(body) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
}

export async function postJson(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

export async function getJson(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url + path, { headers });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** Zero-based line/character of the first `needle` in a fixture file (+ offset into the needle). */
export function position(fixture: string, path: string, needle: string, offset = 0): { line: number; character: number } {
  const text = readFileSync(join(fixturesDir, fixture, path), 'utf8');
  const i = text.indexOf(needle);
  if (i < 0) throw new Error(`${needle} not in ${path}`);
  const before = text.slice(0, i + offset).split('\n');
  return { line: before.length - 1, character: before[before.length - 1]!.length };
}

/** The zero-based line of the first line containing `needle`. */
export function lineOf(fixture: string, path: string, needle: string): number {
  return position(fixture, path, needle).line;
}

export interface Started {
  daemon: Daemon;
  url: string;
  /** Why the daemon cannot serve queries on this host, or undefined when it can. */
  notReady?: string;
}

/**
 * Start lspd and learn from /readyz whether the jail was proved. On a host that
 * cannot run jails at all (no bubblewrap, no user namespaces) `notReady` says why
 * and the tests skip saying so; on a host that can, a daemon that is not ready is
 * a failure, never a skip (unless the test breaks the jail on purpose).
 *
 * Test files run side by side and each daemon needs jail uids no other one uses:
 * 64 of its own from test/helpers/uids.ts.
 */
export async function startDaemon(env: Record<string, string> = {}, opts: { expectReady?: boolean } = {}): Promise<Started> {
  const daemon = await spawnDaemon({ env: { ...jailUidEnv(64), ...env }, timeoutMs: 60_000 });
  const r = await fetch(daemon.url + '/readyz');
  const body = (await r.json()) as { ready: boolean; reason?: string };
  const started: Started = { daemon, url: daemon.url, ...(body.ready ? {} : { notReady: body.reason ?? 'not ready' }) };
  const hostCannot = cannotJail();
  if (!body.ready && opts.expectReady !== false && hostCannot === undefined) {
    await stopDaemon(started);
    throw new Error(`lspd is not ready on a host that can run jails: ${body.reason ?? 'no reason given'}`);
  }
  if (!body.ready && hostCannot !== undefined) started.notReady = hostCannot;
  return started;
}

export async function stopDaemon(s: Started | undefined): Promise<void> {
  if (!s) return;
  await s.daemon.stop();
  s.daemon.cleanup();
}

/** An answer without what legitimately differs between two runs of one question. */
export function stable(a: Record<string, unknown>): Record<string, unknown> {
  const { elapsed_ms: _e, ...rest } = a;
  return rest;
}
