// Question: how much heap do /v1/diff answers over wide changes keep (issue 30,
// reproduction 3: six diffs over three roots of 20,000 files held 624 MiB)?
// Three roots of FILES files with ~290-byte paths (every file changed between any
// two), uploaded through PUT to a daemon in this process; then the six diffs between
// them, page 1 each (what the reproduction asked), then every page of each. Printed:
// the heap after a full GC at each step, the external (Buffer) bytes, the diff
// cache's charged bytes, the largest answer and the pages walked, beside the bytes
// of changed paths a cache of whole diffs would have held; load average at start and end.
//   node --import tsx bench/diff-heap.ts [files]   (default 20,000)
import { loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { makeTar } from '../test/helpers/ops.js';
import { startLspd } from '../test/helpers/lsp-harness.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const FILES = Number(process.argv[2] ?? 20_000) || 20_000;
const org = 'acme';
const repo = 'wide';
const shas = ['a', 'b', 'c'].map((c) => c.repeat(40));
const pathOf = (i: number) => `pkg${i % 50}/${'m'.repeat(120)}/${'n'.repeat(120)}/file-${i}.txt`;
const MiB = 1024 * 1024;

function heap(): { heap: number; external: number } {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external };
}
const mib = (n: number) => (n / MiB).toFixed(1);

async function main(): Promise<void> {
  console.log(`load average at start: ${loadavg()[0]!.toFixed(1)}; ${FILES} files a root`);
  const d = await startLspd();
  try {
    for (const [k, s] of shas.entries()) {
      const files = Object.fromEntries(Array.from({ length: FILES }, (_, i) => [pathOf(i), `root ${k} file ${i}\n`]));
      const r = await fetch(`${d.url}/v1/roots/${org}/${repo}/${s}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/x-tar' },
        body: await makeTar(files),
      });
      if (r.status !== 201) throw new Error(`upload answered ${r.status}: ${await r.text()}`);
    }
    const pairs = shas.flatMap((b) => shas.filter((h) => h !== b).map((h) => [b, h] as const));
    const pathBytes = pairs.length * Array.from({ length: FILES }, (_, i) => Buffer.byteLength(pathOf(i))).reduce((a, b) => a + b, 0);
    const diffBytes = async () => (await d.metrics.cacheBytes.get()).values.find((v) => v.labels.cache === 'diff')?.value ?? 0;
    const post = async (body: Record<string, unknown>) => {
      const r = await fetch(`${d.url}/v1/diff`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ org, repo, ...body }),
      });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`diff answered ${r.status}: ${text.slice(0, 300)}`);
      return { bytes: Buffer.byteLength(text), body: JSON.parse(text) as { next_cursor?: string; files_total: number } };
    };
    const idle = heap();
    console.log(`idle, 3 roots stored: heap ${mib(idle.heap)} MiB, external ${mib(idle.external)} MiB`);
    let largest = 0;
    for (const [base, head] of pairs) largest = Math.max(largest, (await post({ base, head })).bytes);
    const first = heap();
    console.log(
      `6 diffs, page 1 each: heap ${mib(first.heap)} MiB (+${mib(first.heap - idle.heap)}), external +${mib(first.external - idle.external)} MiB, diff cache ${mib(await diffBytes())} MiB, largest answer ${largest} bytes (bound ${d.config.maxAnswerBytes})`,
    );
    let pages = 0;
    for (const [base, head] of pairs) {
      let cursor: string | undefined;
      do {
        const p = await post({ base, head, ...(cursor ? { cursor } : {}) });
        largest = Math.max(largest, p.bytes);
        cursor = p.body.next_cursor;
        pages++;
      } while (cursor);
    }
    const walked = heap();
    console.log(
      `6 diffs walked whole (${pages} pages): heap ${mib(walked.heap)} MiB (+${mib(walked.heap - idle.heap)}), external +${mib(walked.external - idle.external)} MiB, diff cache ${mib(await diffBytes())} MiB (budget ${mib(d.config.diffCacheBytes)}), largest answer ${largest} bytes`,
    );
    console.log(`changed paths in the six diffs (what caching whole diffs kept, before object overhead): ${mib(pathBytes)} MiB`);
  } finally {
    await d.close();
    console.log(`load average at end: ${loadavg()[0]!.toFixed(1)}`);
  }
}

await main();
