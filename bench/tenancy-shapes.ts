// `bench/tenancy --hostile`: issue 30's five hostile shapes, one after another on
// one daemon, each while the polite org asks its questions. Per shape: the polite
// org's p50/p99 during it beside its idle p99 (goal: within 2x), the daemon's peak
// heap while it ran (goal: under 1 GiB with the default limits), and the hostile
// org's charge beside `du` of its roots (goal: within 10%), with what each upload
// was answered. Sizes are the issue's reproductions (--quick: a tenth).
// The shapes themselves are test/chaos/hostile-shapes.ts, the corpus's own.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { request, type Dispatcher } from 'undici';
import { rootPath, type Root } from '../test/chaos/daemons.js';
import {
  emptyDirs,
  hardLinkFanout,
  longLinkTargets,
  longPaths,
  orgDuBytes,
  sampleHeap,
  scrape,
  stagingLeft,
  stallBase,
  stalledPrefix,
  stallUpload,
  tarOfShape,
} from '../test/chaos/hostile-shapes.js';
import { sleep } from '../test/chaos/harness.js';

const MiB = 1024 * 1024;

/** What the polite org saw while one phase ran (bench/tenancy's PhaseFigures, in part). */
export interface Polite {
  n: number;
  p50: number;
  p99: number;
  refused: number;
  wrong: number;
}

export interface ShapesOptions {
  url: string;
  dataDir: string;
  agent: Dispatcher;
  /** The polite org's questions until `work` settles and at least `minMs` passed. */
  politeWhile(work: Promise<unknown>, minMs: number): Promise<Polite>;
  /** The polite org's idle p99, the ratios' denominator. */
  idle: Polite;
  quick: boolean;
  seconds: number;
}

interface ShapeResult {
  name: string;
  org: string;
  polite: Polite;
  startHeap: number;
  peakHeap: number;
  charged: number;
  du: number;
  outcome: string;
}

const keyOf = (org: string, n: string): Root => ({ org, repo: 'shape', sha: createHash('sha1').update(`bench-shape-${org}-${n}`).digest('hex') });

async function put(o: ShapesOptions, key: Root, tar: Buffer, base?: Root): Promise<string> {
  const path = rootPath(key) + (base ? `?base=${base.sha}` : '');
  const r = await request(o.url + path, {
    method: 'PUT',
    body: gzipSync(tar),
    headers: { 'content-type': 'application/gzip' },
    headersTimeout: 900_000,
    bodyTimeout: 900_000,
  }).catch((err: unknown) => ({ statusCode: 0, body: { text: async () => String((err as { code?: string }).code ?? err) } }));
  const text = await r.body.text();
  let code = '';
  try {
    code = String((JSON.parse(text) as { error?: string }).error ?? '');
  } catch {
    code = text.slice(0, 60);
  }
  return `${r.statusCode}${code ? ` ${code}` : ''}`;
}

/** Run one shape while the polite org asks; sample the heap; the org's charge and du after. */
async function measure(o: ShapesOptions, name: string, org: string, work: () => Promise<string>): Promise<ShapeResult> {
  const heap = sampleHeap(o.url, 200, o.agent);
  const running = work();
  const polite = await o.politeWhile(running, o.seconds * 1000);
  const outcome = await running;
  const h = await heap.stop();
  await sleep(500); // the store's gauges are set once the upload's answer is sent
  const m = await scrape(o.url, o.agent);
  return { name, org, polite, startHeap: h.startBytes, peakHeap: h.peakBytes, charged: m.charged[org] ?? 0, du: orgDuBytes(o.dataDir, org), outcome };
}

export async function hostileShapes(o: ShapesOptions): Promise<string[]> {
  const k = o.quick ? 10 : 1;
  const sizes = {
    fanoutLinks: Math.round(64_999 / k),
    emptyDirs: Math.round(20_000 / k),
    longPathFiles: Math.round(20_000 / k),
    linkTargets: Math.round(20_000 / k),
    stallBaseFiles: Math.round(20_000 / k),
  };
  const results: ShapeResult[] = [];

  {
    const org = 'h-links';
    const s = hardLinkFanout(sizes.fanoutLinks);
    const tars = { base: await tarOfShape(s.base), layer: await tarOfShape(s.layer) };
    results.push(
      await measure(o, `hard-link fan-out (${sizes.fanoutLinks} links, a layer on top)`, org, async () => {
        const base = keyOf(org, 'base');
        const b = await put(o, base, tars.base);
        return `base ${b}, layer ${b.startsWith('201') ? await put(o, keyOf(org, 'head'), tars.layer, base) : '-'}`;
      }),
    );
  }
  {
    const org = 'h-dirs';
    const tars = await Promise.all([0, 1, 2].map((u) => tarOfShape(emptyDirs(sizes.emptyDirs, String(u)))));
    results.push(
      await measure(o, `empty directories (3 x ${sizes.emptyDirs})`, org, async () => {
        const out: string[] = [];
        for (let u = 0; u < tars.length; u++) out.push(await put(o, keyOf(org, `dirs-${u}`), tars[u]!));
        return out.join(', ');
      }),
    );
  }
  {
    const org = 'h-paths';
    const tar = await tarOfShape(longPaths(sizes.longPathFiles, 2_900));
    results.push(await measure(o, `long paths (${sizes.longPathFiles} empty files, 2.9 KB paths)`, org, () => put(o, keyOf(org, 'paths'), tar)));
  }
  {
    const org = 'h-targets';
    const s = longLinkTargets(sizes.linkTargets, 300);
    const tars = { base: await tarOfShape(s.base), layer: await tarOfShape(s.layer) };
    results.push(
      await measure(o, `long link targets (${sizes.linkTargets} x 1.5 KB, a layer on top)`, org, async () => {
        const base = keyOf(org, 'base');
        const b = await put(o, base, tars.base);
        return `base ${b}, layer ${b.startsWith('201') ? await put(o, keyOf(org, 'head'), tars.layer, base) : '-'}`;
      }),
    );
  }
  {
    const org = 'h-stall';
    const base = keyOf(org, 'base');
    const stored = await put(o, base, await tarOfShape(stallBase(sizes.stallBaseFiles, 1000)));
    results.push(
      await measure(o, `6 stalled layers (512 B each, base of ${sizes.stallBaseFiles} files), until cut`, org, async () => {
        const stalled = Array.from({ length: 6 }, (_, i) => stallUpload(o.url, rootPath(keyOf(org, `stalled-${i}`)), base.sha, stalledPrefix()));
        // Held until the daemon cuts them (its read timeout, LSPD_UPLOAD_READ_TIMEOUT_MS: 60 s by default), 90 s at most;
        // what staging held while they stalled, and after.
        const t0 = Date.now();
        await sleep(Math.min(o.seconds * 1000, 5_000));
        const stagedWhile = stagingLeft(o.dataDir).length;
        while (Date.now() - t0 < 90_000 && !stalled.every((s) => s.done)) await sleep(250);
        const heldMs = Date.now() - t0;
        const cut = stalled.filter((s) => s.done).length;
        for (const s of stalled) s.abort();
        const settled = await Promise.all(stalled.map((s) => s.settled));
        await sleep(1_000);
        return `base ${stored}; ${cut}/6 cut by the daemon within ${(heldMs / 1000).toFixed(0)} s (${settled.map((s) => s.status || s.code).join(' ')}); staging dirs ${stagedWhile} while stalled, ${stagingLeft(o.dataDir).length} after`;
      }),
    );
  }

  const row = (r: ShapeResult) => {
    const ratio = r.du > 0 ? r.charged / r.du : NaN;
    return `| ${r.name} | ${r.polite.n} | ${r.polite.p50} | ${r.polite.p99} | ${(r.polite.p99 / o.idle.p99).toFixed(2)}x | ${r.polite.refused}/${r.polite.wrong} | ${Math.round(r.startHeap / MiB)} → ${Math.round(r.peakHeap / MiB)} | ${(r.charged / MiB).toFixed(2)} | ${(r.du / MiB).toFixed(2)} | ${ratio.toFixed(3)} | ${r.outcome} |`;
  };
  const peak = Math.max(...results.map((r) => r.peakHeap));
  const worstP99 = Math.max(...results.map((r) => r.polite.p99 / o.idle.p99));
  const charges = results.filter((r) => r.du > 0).map((r) => Math.abs(r.charged / r.du - 1));
  const refusals = (await scrape(o.url, o.agent)).refusals;
  return [
    `hostile shapes${o.quick ? ' (--quick: a tenth of the reproductions)' : " (the issue's reproduction sizes)"}, each while the polite org asks; idle p99 ${o.idle.p99} ms`,
    '| shape | polite n | p50 ms | p99 ms | p99/idle | refused/wrong | daemon heap MiB (start → peak) | charged MiB | du MiB | charged/du | uploads answered |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(row),
    '',
    `work refused 503 busy over the run, by reason (lspd_org_refusals_total): ${JSON.stringify(refusals)}`,
    `goals: polite p99 within 2x of idle: worst ${worstP99.toFixed(2)}x ${worstP99 <= 2 ? 'met' : 'MISSED'}; peak heap under 1 GiB: ${Math.round(peak / MiB)} MiB ${peak < 1024 * MiB ? 'met' : 'MISSED'}; charge within 10% of du: worst ${(Math.max(...charges) * 100).toFixed(1)}% off ${Math.max(...charges) <= 0.1 ? 'met' : 'MISSED'}`,
  ];
}
