// What the chaos scenarios run against, each daemon with a jail uid range no other
// test file uses (so "no process of this range survives" means something; a restart
// keeps its slot's range), and the TypeScript fixture's queries with the answers
// they must get. The daemons themselves start in test/helpers/daemon.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { spawnDaemon, type Daemon, fixturesDir } from '../helpers/daemon.js';
import type { Call } from './harness.js';
import type { UidRange } from '../helpers/uids.js';
import { jailUids } from '../helpers/uids.js';
import { lineOf, position, shaOf, tarOf, type Root } from '../helpers/lsp-harness.js';

export { fixturesDir, shaOf, type Root };

/** 64 jail uids of their own for daemon `slot` of this test process. */
const slots = new Map<number, UidRange>();

/** A chaos slot's jail uids (test/helpers/uids.ts), the same range each time the slot is asked for. */
export function uidRange(slot: number): UidRange {
  let r = slots.get(slot);
  if (!r) slots.set(slot, (r = jailUids(64)));
  return r;
}

/**
 * What every chaos daemon runs with beside its scenario's own settings: the result
 * cache off, so every query reaches a language server, which is what load is for.
 * Started by test/helpers/daemon.ts (spawnServing, startLspd) with `uids: uidRange(slot)`.
 */
export const CHAOS_ENV: Readonly<Record<string, string>> = { LSPD_RESULT_CACHE_ENTRIES: '0' };

/** Collect a stream into one Buffer (fixture tars are small). */
export async function bufferOf(s: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const fixtureTars = new Map<string, Buffer>();
/** A fixture directory as a tar (built once per process). */
export async function fixtureTar(name: string): Promise<Buffer> {
  let b = fixtureTars.get(name);
  if (!b) {
    b = await bufferOf(tarOf(join(fixturesDir, name)));
    fixtureTars.set(name, b);
  }
  return b;
}

export const rootPath = (r: Root) => `/v1/roots/${r.org}/${r.repo}/${r.sha}`;

/** PUT a tar; throws unless stored (201) or already there (200). */
export async function putTar(url: string, root: Root, tar: Buffer): Promise<Record<string, unknown>> {
  const r = await fetch(url + rootPath(root), { method: 'PUT', body: tar, headers: { 'content-type': 'application/x-tar' } });
  const body = (await r.json()) as Record<string, unknown>;
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload ${rootPath(root)}: ${r.status} ${JSON.stringify(body)}`);
  return body;
}

/** n roots of the ts-basic fixture, uploaded. */
export async function tsRoots(url: string, n: number, tag: string): Promise<Root[]> {
  const tar = await fixtureTar('ts-basic');
  const roots = Array.from({ length: n }, (_, i) => ({ org: 'chaos', repo: `ts${i}`, sha: shaOf(`${tag}-${i}`) }));
  for (const r of roots) await putTar(url, r, tar);
  return roots;
}

type Loc = { path?: string; range?: { start?: { line?: number } } };
const FX = 'ts-basic';
const greetLine = lineOf(FX, 'src/greet.ts', 'export function greet');
const personLine = lineOf(FX, 'src/greet.ts', 'export class Person');
const callAt = position(FX, 'src/app.ts', "greet('world')");
const declAt = position(FX, 'src/greet.ts', 'function greet', 'function '.length);

/** One of five questions about ts-basic, each with the answer it must get. */
export function tsCall(root: Root, i: number): Call {
  const base = { org: root.org, repo: root.repo, sha: root.sha };
  switch (i % 5) {
    case 0:
      return {
        method: 'POST',
        path: '/v1/code/lsp',
        json: { ...base, op: 'definition', path: 'src/app.ts', ...callAt },
        check: (b) => (b.locations as Loc[])[0]?.path === 'src/greet.ts' && (b.locations as Loc[])[0]?.range?.start?.line === greetLine,
      };
    case 1:
      return {
        method: 'POST',
        path: '/v1/code/lsp',
        json: { ...base, op: 'hover', path: 'src/app.ts', ...callAt },
        check: (b) => /function greet\(name: string\): string/.test(String(b.contents)),
      };
    case 2:
      return { method: 'POST', path: '/v1/code/lsp', json: { ...base, op: 'references', path: 'src/greet.ts', ...declAt }, check: (b) => b.total === 4 };
    case 3:
      return {
        method: 'POST',
        path: '/v1/code/lsp',
        json: { ...base, op: 'documentSymbols', path: 'src/greet.ts' },
        check: (b) =>
          (b.symbols as { name: string; range: { start: { line: number } } }[]).some((s) => s.name === 'Person' && s.range.start.line === personLine),
      };
    default:
      return {
        method: 'POST',
        path: '/ask',
        json: { ...base, symbol: 'Person' },
        check: (b) => (b.locations as Loc[]).some((l) => l.path === 'src/greet.ts' && l.range?.start?.line === personLine),
      };
  }
}

/** Load over several roots: call i goes to root i mod n, question i div n. */
export const tsLoad = (roots: readonly Root[]) => (i: number) => tsCall(roots[i % roots.length]!, Math.floor(i / roots.length));

/** Fixture text (for tests that build trees from it). */
export const fixtureText = (rel: string) => readFileSync(join(fixturesDir, rel), 'utf8');
