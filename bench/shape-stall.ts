// Question: how long does one hostile upload hold the daemon's event loop in one
// synchronous slice? (issue 30: another org's p99 during the "long link targets" shape
// of `bench/tenancy --hostile` was 2.33x its idle p99.) A load-independent proxy for
// that p99: the longest gaps between turns of the loop, counted in the daemon's own
// process (the daemon runs in this one, as the test harness starts it; the client side
// is one undici PUT of a prepared gzip buffer). Printed per phase (base, then the
// layer composed on it): the longest gaps, how many passed 5/10/20 ms, and the
// load average beside them. Under load a gap is mostly the process waiting for a
// CPU, so the busiest gap is given by what a CPU profile sampled inside it (a sample
// a ms the thread ran): our longest slice in CPU ms, and its top frame.
//   node --import tsx bench/shape-stall.ts [--shape links|paths|dirs|fanout] [--n 20000] [--runs 3]
import { createHash } from 'node:crypto';
import { Session } from 'node:inspector';
import { loadavg } from 'node:os';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { startLspd } from '../test/helpers/lsp-harness.js';
import { emptyDirs, hardLinkFanout, longLinkTargets, longPaths, tarOfShape, type Layered } from '../test/chaos/hostile-shapes.js';
import { opt } from './upload.js';

const shape = opt('shape', 'links');
const n = Number(opt('n', '20000'));
const runs = Number(opt('runs', '3'));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

function shapeOf(): Layered {
  if (shape === 'links') return longLinkTargets(n, 300);
  if (shape === 'fanout') return hardLinkFanout(n);
  if (shape === 'paths') return { base: longPaths(n, 2_900), layer: [{ name: 'layer/added.txt', data: 'x\n' }] };
  if (shape === 'dirs') return { base: emptyDirs(n), layer: [{ name: 'layer/added.txt', data: 'x\n' }] };
  throw new Error(`--shape ${shape}: links, fanout, paths or dirs`);
}

/** A CPU profile of this process (node:inspector), for the samples inside each gap. */
interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Gaps between turns of this process's loop (a 1 ms timer: each late firing is a slice
 * that held the loop, or the process waiting for a CPU), and the profiler's samples
 * inside each (one a ms of CPU the loop's thread ran): the busiest gap is our longest
 * slice in CPU ms, a figure the host's load barely moves; what it ran is named.
 */
async function gapMeter() {
  const gaps: { end: number; ms: number }[] = [];
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) => new Promise<unknown>((res, rej) => session.post(method, params, (err, r) => (err ? rej(err) : res(r))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 1000 });
  await post('Profiler.start');
  let last = performance.now();
  const t = setInterval(() => {
    const now = performance.now();
    // The end in the profile's clock (V8's and libuv's monotonic µs).
    gaps.push({ end: Number(process.hrtime.bigint() / 1000n), ms: now - last - 1 });
    last = now;
  }, 1);
  return {
    async stop() {
      clearInterval(t);
      const { profile } = (await post('Profiler.stop')) as { profile: Profile };
      session.disconnect();
      const frames = new Map(profile.nodes.map((node) => [node.id, node]));
      const parents = new Map<number, number>();
      for (const node of profile.nodes) for (const c of node.children ?? []) parents.set(c, node.id);
      const idle = new Set(profile.nodes.filter((node) => ['(idle)', '(program)'].includes(node.callFrame.functionName)).map((node) => node.id));
      const at: number[] = [];
      let ts = profile.startTime;
      for (const d of profile.timeDeltas) at.push((ts += d));
      const busiest = { samples: 0, ms: 0, frame: '' };
      for (const g of gaps.filter((x) => x.ms > 5)) {
        const inside = profile.samples.filter((id, i) => !idle.has(id) && at[i]! <= g.end && at[i]! >= g.end - g.ms * 1000);
        if (inside.length <= busiest.samples) continue;
        // Frames by samples under them (inclusive), lspd's own first: what the slice was doing.
        const top = new Map<string, number>();
        for (const id of inside) {
          const seen = new Set<string>();
          for (let x: number | undefined = id; x !== undefined; x = parents.get(x)) {
            const f = frames.get(x)!.callFrame;
            if (f.url.includes('/src/') || f.functionName === '(garbage collector)')
              seen.add(`${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}`);
          }
          if (seen.size === 0) seen.add(`${frames.get(id)!.callFrame.functionName} ${frames.get(id)!.callFrame.url.split('/').slice(-2).join('/')}`);
          for (const name of seen) top.set(name, (top.get(name) ?? 0) + 1);
        }
        const names = [...top].sort((a, b) => b[1] - a[1]).slice(0, 3);
        Object.assign(busiest, { samples: inside.length, ms: g.ms, frame: names.map(([k, v]) => `${k.trim()} ${v}`).join('; ') });
      }
      return { gaps: gaps.map((x) => x.ms).sort((a, b) => b - a), busiest };
    },
  };
}

const s = shapeOf();
const tars = { base: gzipSync(await tarOfShape(s.base)), layer: gzipSync(await tarOfShape(s.layer)) };
const d = await startLspd();
console.log(`# shape-stall: ${shape} x ${n} (base ${tars.base.length} B gzipped, layer ${tars.layer.length} B), ${runs} runs; load ${load()}`);
console.log(
  '| run | phase | answer | ms | longest gaps (ms) | gaps > 5 / 10 / 20 ms | busiest gap: CPU samples (ms) in it, its length, the daemon frames under them | load |',
);
console.log('|---|---|---|---|---|---|---|---|');
try {
  for (let run = 0; run < runs; run++) {
    const sha = (tag: string) => createHash('sha1').update(`shape-stall-${run}-${tag}`).digest('hex');
    for (const phase of ['base', 'layer'] as const) {
      const path = `/v1/roots/stall/${shape}/${sha(phase)}${phase === 'layer' ? `?base=${sha('base')}` : ''}`;
      const meter = await gapMeter();
      const t0 = performance.now();
      const r = await request(d.url + path, {
        method: 'PUT',
        body: tars[phase],
        headers: { 'content-type': 'application/gzip' },
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      await r.body.text();
      const ms = performance.now() - t0;
      const { gaps, busiest } = await meter.stop();
      const over = (x: number) => gaps.filter((g) => g > x).length;
      console.log(
        `| ${run} | ${phase} | ${r.statusCode} | ${ms.toFixed(0)} | ${gaps
          .slice(0, 5)
          .map((g) => g.toFixed(1))
          .join(', ')} | ${over(5)} / ${over(10)} / ${over(20)} | ${busiest.samples} in ${busiest.ms.toFixed(0)} ms, ${busiest.frame} | ${load()} |`,
      );
    }
  }
} finally {
  await d.close();
}
