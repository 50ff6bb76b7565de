// Trees and requests, for every test that talks to a running lspd (daemon.ts starts
// it): fixture trees as tar streams uploaded through the real PUT route, JSON
// requests, positions found by text (never hard-coded numbers), and waiting on a
// root's fetch. startLspd and the host checks are re-exported: LSP tests import
// their whole set-up from here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { fixturesDir, type Lspd } from './daemon.js';
import { pidsOfUids, waitFor } from './jail.js';

export { cannotJail } from './host.js';
export { fixturesDir, projectDir, realRows, startLspd, type Lspd } from './daemon.js';
export { pidsOfUids, waitFor };

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

/** A directory as a tar stream (tar-stream pack()), node_modules included. */
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

/** PUT a fixture's tree; the answer as is. */
export async function upload(url: string, root: Root, fixture: string, headers: Record<string, string> = {}): Promise<Response> {
  return putDir(url, root, join(fixturesDir, fixture), '', headers);
}

function putDir(url: string, root: Root, dir: string, query: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/roots/${root.org}/${root.repo}/${root.sha}${query}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar', ...headers },
    body: Readable.toWeb(tarOf(dir)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
}

/** Upload a fixture through PUT and assert it was stored. */
export async function uploadFixture(url: string, root: Root, fixture: string): Promise<void> {
  const r = await upload(url, root, fixture);
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload of ${fixture} answered ${r.status}: ${await r.text()}`);
  await r.arrayBuffer().catch(() => undefined);
}

/** Upload a directory (not a fixture name) through PUT; `query` e.g. `?warm=false`. */
export async function uploadDir(url: string, root: Root, dir: string, query = ''): Promise<void> {
  const r = await putDir(url, root, dir, query);
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload answered ${r.status}: ${await r.text()}`);
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

/** POST /v1/code/lsp. */
export async function lspQuery(url: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  return postJson(url, '/v1/code/lsp', body);
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

/** An answer without what legitimately differs between two runs of one question. */
export function stable(a: Record<string, unknown>): Record<string, unknown> {
  const { elapsed_ms: _e, ...rest } = a;
  return rest;
}

/** Host pids of this daemon's jailed processes. */
export function jailedPids(d: Lspd): number[] {
  return pidsOfUids(d.uidBase, d.config.jailUidCount);
}

/** GET the root until its fetch has settled (done/failed/refused/none); its `fetch` view. */
export async function fetchSettled(url: string, root: Root, timeoutMs = 90_000): Promise<{ state: string; error?: string; log?: string }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await getJson(url, `/v1/roots/${root.org}/${root.repo}/${root.sha}`);
    const f = r.body.fetch as { state: string };
    if (!['queued', 'running'].includes(f.state) || Date.now() > until) return f;
    await new Promise((res) => setTimeout(res, 100));
  }
}
