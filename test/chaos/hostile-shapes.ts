// The five hostile shapes of issue 30 (a few KB of input that once cost the whole
// daemon disk, heap or its event loop), as generators shared by the chaos corpus
// (hostile-suite.ts) and `bench/tenancy --hostile`, and what both count of them:
// an org's charge beside `du` of its roots, the daemon's heap, what staging holds.
//   hard-link fan-out   a base of one 4 KiB file and N tar hard links to it, a layer on top
//                       (ext4 allows 65,000 links per inode: past it compose copied every file)
//   empty directories   N of them (metadata was never charged)
//   long paths          N empty files with long names (a tree.idx of MiBs, charged 0)
//   long link targets   N symlinks with long targets, a layer on top (every split target
//                       held for the whole upload; compose re-walked every link synchronously)
//   stalled layers      incremental uploads that send one header and stall (each decoded
//                       its base's whole index before its body arrived)
// Names carry no language suffix, so no shape starts a language server or a fetch.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { request, type Dispatcher } from 'undici';
import { hangingBody, packTar, rawHeader, type PackEntry } from '../store-helpers.js';

/** A base tree and a small layer composed on it with `?base=`. */
export interface Layered {
  base: PackEntry[];
  layer: PackEntry[];
}

/** The 10 KB layer every layered shape puts on its base (one new file). */
export const smallLayer = (): PackEntry[] => [{ name: 'layer/added.txt', data: 'layer line\n'.repeat(1000) }];

/** Spread n names over directories of at most 1,000 entries each (as a real tree would, and as ext4's htree likes). */
const spread = (i: number, leaf: string) => `d${Math.floor(i / 1000)}/${leaf}${i}`;

/** Reproduction 1: one 4 KiB file and `links` tar hard links to it (type '1'), then a layer. */
export function hardLinkFanout(links: number): Layered {
  const base: PackEntry[] = [{ name: 'f', data: Buffer.alloc(4096, 'x') }];
  for (let i = 0; i < links; i++) base.push({ name: spread(i, 'h'), type: 'link', linkname: 'f' });
  return { base, layer: smallLayer() };
}

/** Reproduction 2: `n` empty directories (and one file, so the tree is not empty). */
export function emptyDirs(n: number, tag = ''): PackEntry[] {
  const out: PackEntry[] = [{ name: `readme${tag}.txt`, data: 'empty dirs\n' }];
  for (let i = 0; i < n; i++) out.push({ name: spread(i, `e${tag}`), type: 'directory' });
  return out;
}

/** Reproduction 2: `n` empty files whose paths are about `pathBytes` long (under lspd's 3 KiB path bound). */
export function longPaths(n: number, pathBytes: number): PackEntry[] {
  // Directories of 200 bytes each, then a leaf name filling the rest (every component under 255 bytes).
  const dirs = Math.max(1, Math.floor((pathBytes - 250) / 201));
  const prefix = Array.from({ length: dirs }, (_, k) => String.fromCharCode(97 + (k % 26)).repeat(200)).join('/');
  const leaf = 'p'.repeat(Math.max(1, Math.min(240, pathBytes - prefix.length - 12)));
  return Array.from({ length: n }, (_, i) => ({ name: `${prefix}/${Math.floor(i / 1000)}/${leaf}${i}`, data: '' }));
}

/**
 * Reproduction 4: `links` symlinks, each climbing `depth` names and back down to
 * the one file (a target of about 5 × depth bytes that stays inside the root), then a layer.
 */
export function longLinkTargets(links: number, depth: number): Layered {
  const base: PackEntry[] = [{ name: 'f', data: 'target\n' }];
  const target = `../${'x/'.repeat(depth)}${'../'.repeat(depth)}f`;
  for (let i = 0; i < links; i++) base.push({ name: spread(i, 's'), type: 'symlink', linkname: target });
  return { base, layer: smallLayer() };
}

/** A base for stalled layers: `n` empty files with paths of about `pathBytes` (its tree index is what a stalled upload used to decode). */
export const stallBase = (n: number, pathBytes: number): PackEntry[] => longPaths(n, pathBytes);

/** The few hundred bytes a stalled layer sends: one header announcing 10 KB that never come. */
export const stalledPrefix = (): Buffer => rawHeader({ name: 'layer/stalled.txt', size: 10_000 });

export interface Stalled {
  /** Settles when the daemon answers or cuts the connection: the status, or 0 and the error code. */
  settled: Promise<{ status: number; code?: string }>;
  /** Whether it settled yet. */
  readonly done: boolean;
  /** Hang up (the client's side). */
  abort(): void;
}

/** Start an incremental upload on `base` that sends `prefix` and then nothing, until the daemon cuts it or abort(). */
export function stallUpload(url: string, path: string, base: string, prefix: Buffer, dispatcher?: Dispatcher): Stalled {
  const ac = new AbortController();
  let done = false;
  const settled = request(`${url}${path}?base=${base}`, {
    method: 'PUT',
    body: hangingBody([prefix]),
    headers: { 'content-type': 'application/x-tar' },
    signal: ac.signal,
    headersTimeout: 0,
    bodyTimeout: 0,
    ...(dispatcher ? { dispatcher } : {}),
  })
    .then(async (r) => {
      await r.body.text().catch(() => '');
      return { status: r.statusCode };
    })
    // An abort of ours is 'aborted'; anything else is the daemon cutting the connection (undici's code, e.g. UND_ERR_SOCKET).
    .catch((err: unknown) => ({ status: 0, code: ac.signal.aborted ? 'aborted' : String((err as { code?: string }).code ?? (err as Error).name) }))
    .finally(() => (done = true));
  return {
    settled,
    get done() {
      return done;
    },
    abort: () => ac.abort(),
  };
}

/** The tar of a shape's entries (tar-stream writes PAX headers for long names and targets). */
export const tarOfShape = (entries: PackEntry[]): Promise<Buffer> => packTar(entries);

// --- what is counted ----------------------------------------------------------

/** `du -sB1` of a directory: blocks really used, each hard-linked inode once (0 when absent). */
export function duBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  const r = spawnSync('du', ['-sB1', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`du ${dir}: ${r.stderr}`);
  return Number(r.stdout.split('\t')[0]);
}

/**
 * `du` of one org's roots (each root's dir: tree, deps, tree.idx, meta.json), in one
 * `du` so a file hard-linked between two of them counts once; the org and repo
 * directories above them are not a root's.
 */
export function orgDuBytes(dataDir: string, org: string): number {
  const orgDir = join(dataDir, 'roots', org);
  if (!existsSync(orgDir)) return 0;
  const roots = readdirSync(orgDir).flatMap((repo) => readdirSync(join(orgDir, repo)).map((sha) => join(orgDir, repo, sha)));
  if (roots.length === 0) return 0;
  const r = spawnSync('du', ['-scB1', ...roots], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`du ${orgDir}: ${r.stderr}`);
  return Number(r.stdout.trim().split('\n').at(-1)!.split('\t')[0]);
}

/** Entries left in the data dir's staging/ (an upload cut or refused must leave none). */
export function stagingLeft(dataDir: string): string[] {
  const dir = join(dataDir, 'staging');
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** One sample of the parts of /metrics the shapes are judged by. */
export interface MetricsSample {
  /** The V8 heap in use: `lspd_daemon_heap_bytes` where the daemon exports it, else prom-client's `nodejs_heap_size_used_bytes`. */
  heapBytes: number;
  /** `lspd_org_disk_bytes` per org (what each org is charged). */
  charged: Record<string, number>;
  /** `lspd_org_refusals_total` summed per reason. */
  refusals: Record<string, number>;
}

const value = (line: string) => Number(line.slice(line.lastIndexOf(' ') + 1));
const label = (line: string, name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? '';

export function parseMetrics(text: string): MetricsSample {
  let own: number | undefined;
  let prom = 0;
  const charged: Record<string, number> = {};
  const refusals: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('lspd_daemon_heap_bytes')) own = Math.max(own ?? 0, value(line));
    else if (line.startsWith('nodejs_heap_size_used_bytes')) prom = value(line);
    else if (line.startsWith('lspd_org_disk_bytes{')) charged[label(line, 'org')] = value(line);
    else if (line.startsWith('lspd_org_refusals_total{')) {
      const reason = label(line, 'reason');
      refusals[reason] = (refusals[reason] ?? 0) + value(line);
    }
  }
  return { heapBytes: own ?? prom, charged, refusals };
}

export async function scrape(url: string, dispatcher?: Dispatcher): Promise<MetricsSample> {
  const r = await request(`${url}/metrics`, { ...(dispatcher ? { dispatcher } : {}), headersTimeout: 30_000, bodyTimeout: 30_000 });
  return parseMetrics(await r.body.text());
}

/**
 * The daemon's heap, sampled from /metrics every `stepMs` until stopped: its peak
 * beside where it started. (The heap in use includes garbage not yet collected, so
 * the peak is an upper bound of what a shape held, never less.)
 */
export function sampleHeap(
  url: string,
  stepMs = 200,
  dispatcher?: Dispatcher,
): { stop(): Promise<{ startBytes: number; peakBytes: number; samples: number }> } {
  let running = true;
  let startBytes = 0;
  let peakBytes = 0;
  let samples = 0;
  const loop = (async () => {
    while (running) {
      const s = await scrape(url, dispatcher).catch(() => undefined);
      if (s) {
        if (samples++ === 0) startBytes = s.heapBytes;
        peakBytes = Math.max(peakBytes, s.heapBytes);
      }
      await new Promise((res) => setTimeout(res, stepMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { startBytes, peakBytes, samples };
    },
  };
}

/** An org's charge beside du of its roots: the ratio the goal (within 10%) is about. */
export function chargeVsDu(charged: number, du: number): { charged: number; du: number; ratio: number } {
  return { charged, du, ratio: du > 0 ? charged / du : NaN };
}
