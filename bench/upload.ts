// Question: how fast does lspd store an uploaded tree, and does its memory stay
// flat as the tree grows? Generates a 50 MB and a 500 MB tree (many small files,
// a few large ones) as tar and tar.gz, uploads each to a spawned daemon, and
// prints MB/s and the daemon's peak RSS beside GNU `tar -x` of the same archive
// onto the same disk in the same run. lspd also checks every entry and makes the
// tree durable (syncfs) before answering, so `tar -x && sync -f` is shown too.
//
//   node --import tsx bench/upload.ts [--sizes 50,500] [--runs 2]
import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { Agent, request } from 'undici';
import { spawnDaemon, tempDir } from '../test/helpers/daemon.js';

const MB = 1024 * 1024;
const args = process.argv.slice(2);
/** `--name value` from the command line, else `def` (bench/push.ts reads its flags with it too). */
export const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const sizesMb = opt('sizes', '50,500').split(',').map(Number);
const runs = Number(opt('runs', '2'));

/** Source-like text to slice files from, so gzip sees something realistic (bench/push.ts reuses it). */
export function corpus(): Buffer {
  const words = [
    'const',
    'function',
    'return',
    'import',
    'export',
    'if',
    'else',
    'for',
    'value',
    'result',
    'config',
    'async',
    'await',
    '{',
    '}',
    '(',
    ')',
    ';',
    '=',
    '=>',
    'string',
    'number',
    'x',
    'i',
    '0',
    '1',
  ];
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const parts: string[] = [];
  let len = 0;
  while (len < 4 * MB) {
    const line = Array.from({ length: 4 + Math.floor(rnd() * 10) }, () => words[Math.floor(rnd() * words.length)]).join(' ') + '\n';
    parts.push(line);
    len += line.length;
  }
  return Buffer.from(parts.join(''));
}

/** A tree of about `totalMb`: 70% in small files (1-16 KiB, 40 to a directory), 30% in three large ones. */
export async function writeTar(path: string, totalMb: number, text: Buffer): Promise<{ files: number; bytes: number }> {
  const pack = tar.pack();
  const out = pipeline(pack, createWriteStream(path));
  let bytes = 0;
  let files = 0;
  let off = 0;
  const slice = (n: number) => {
    if (off + n > text.length) off = 0;
    const b = text.subarray(off, off + n);
    off += 977;
    return b;
  };
  const add = (name: string, data: Buffer) =>
    new Promise<void>((res, rej) => pack.entry({ name, size: data.length, mode: 0o644 }, data, (err) => (err ? rej(err) : res())));
  const smallTotal = totalMb * MB * 0.7;
  while (bytes < smallTotal) {
    const size = 1024 + ((files * 7919) % (15 * 1024));
    await add(`src/pkg${Math.floor(files / 40)}/file${files}.ts`, slice(size));
    bytes += size;
    files++;
  }
  const large = Math.floor((totalMb * MB * 0.3) / 3);
  for (let i = 0; i < 3; i++) {
    const chunk = Buffer.concat(Array.from({ length: Math.ceil(large / text.length) }, () => text)).subarray(0, large);
    await add(`assets/large${i}.bin`, chunk);
    bytes += large;
    files++;
  }
  pack.finalize();
  await out;
  return { files, bytes };
}

function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Reset VmHWM (proc(5): writing 5 to clear_refs resets the peak RSS), so each case reports its own peak. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const execFileP = promisify(execFile);

/** "median (min-max)" of ratios. */
function spread(xs: number[]): string {
  const v = [...xs].sort((a, b) => a - b);
  const mid = v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
  return `${mid.toFixed(2)} (${v[0]!.toFixed(2)}-${v.at(-1)!.toFixed(2)})`;
}

/** Seconds a command takes. Async on purpose: a blocked event loop would keep HTTP keep-alive timers from firing. */
async function time(cmd: string, args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint();
  await execFileP(cmd, args, { maxBuffer: 64 * MB });
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function main(): Promise<void> {
  const work = tempDir('upload-bench-');
  const text = corpus();
  console.log(`# lspd upload bench — work dir ${work} (same disk for tar and lspd), best of ${runs}`);
  const daemon = await spawnDaemon({ dataDir: join(work, 'data'), env: { LSPD_MAX_TREE_FILES: '1000000' }, timeoutMs: 120_000 });
  const pid = daemon.child.pid!;
  // An interrupted bench must not leave its daemon running.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      daemon.child.kill('SIGKILL');
      rmSync(work, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const rows: string[][] = [];
  let shaN = 0;
  try {
    const idleRss = peakRssMb(pid);
    console.log(`# daemon pid ${pid}, peak RSS after start ${idleRss.toFixed(0)} MB`);
    for (const sizeMb of sizesMb) {
      const tarPath = join(work, `tree-${sizeMb}.tar`);
      const gzPath = `${tarPath}.gz`;
      const { files, bytes } = await writeTar(tarPath, sizeMb, text);
      await pipeline(createReadStream(tarPath), createGzip(), createWriteStream(gzPath));
      const tarBytes = statSync(tarPath).size;
      console.log(
        `# ${sizeMb} MB tree: ${files} files, ${(bytes / MB).toFixed(0)} MB content, tar ${(tarBytes / MB).toFixed(0)} MB, tar.gz ${(statSync(gzPath).size / MB).toFixed(0)} MB`,
      );

      for (const gz of [false, true]) {
        const archive = gz ? gzPath : tarPath;
        let best = { lspd: Infinity, tar: Infinity, tarSync: Infinity, rss: 0, syncS: NaN };
        // Each run times tar then lspd seconds apart: their ratio is robust to the disk's
        // drift between runs, which best-of-each is not.
        const paired: { tar: number[]; tarSync: number[] } = { tar: [], tarSync: [] };
        for (let run = 0; run < runs; run++) {
          // GNU tar onto the same disk; -o: do not chown (the daemon does not either).
          // Nothing is deleted until the end: on ext4 without a journal, creating files
          // soon after many were deleted is several times slower (find_inode_bit skips
          // inodes freed in the last minute: recently_deleted() under perf), and
          // whichever side ran just after a deletion would pay for it.
          const dest = join(work, `tar-out-${sizeMb}-${gz ? 'gz' : 'tar'}-${run}`);
          mkdirSync(dest);
          const tTar = await time('tar', [gz ? '-xzof' : '-xof', archive, '-C', dest]);
          const tSync = await time('sync', ['-f', dest]);

          resetPeak(pid);
          const sha = (++shaN).toString(16).padStart(40, '0');
          // A fresh connection per upload: nothing left from the last one can interfere.
          const dispatcher = new Agent();
          const t0 = process.hrtime.bigint();
          const r = await request(`${daemon.url}/v1/roots/bench/t${sizeMb}/${sha}`, {
            dispatcher,
            method: 'PUT',
            body: createReadStream(archive, { highWaterMark: 256 * 1024 }),
            headers: { 'content-type': gz ? 'application/gzip' : 'application/x-tar' },
          }).catch((err: unknown) => {
            console.error(daemon.logs.slice(-5));
            throw err;
          });
          const answer = (await r.body.json()) as { files?: number; error?: string };
          const tLspd = Number(process.hrtime.bigint() - t0) / 1e9;
          if (r.statusCode !== 201) throw new Error(`upload answered ${r.statusCode}: ${JSON.stringify(answer)}`);
          if (answer.files !== files) throw new Error(`stored ${answer.files} files, expected ${files}`);
          const rss = peakRssMb(pid);
          const stored = daemon.logs.filter((l) => l.msg === 'root stored').at(-1);
          const syncS = Number(stored?.syncMs ?? NaN) / 1000;
          await dispatcher.close();
          paired.tar.push(tTar / tLspd);
          paired.tarSync.push((tTar + tSync) / tLspd);
          best = {
            syncS: tLspd < best.lspd ? syncS : best.syncS,
            lspd: Math.min(best.lspd, tLspd),
            tar: Math.min(best.tar, tTar),
            tarSync: Math.min(best.tarSync, tTar + tSync),
            rss: Math.max(best.rss, rss),
          };
        }
        const mbs = (t: number) => tarBytes / MB / t;
        rows.push([
          `${sizeMb} MB ${gz ? 'tar.gz' : 'tar'}`,
          mbs(best.lspd).toFixed(0),
          `${best.lspd.toFixed(2)} (${best.syncS.toFixed(2)})`,
          best.rss.toFixed(0),
          mbs(best.tar).toFixed(0),
          (best.tar / best.lspd).toFixed(2),
          mbs(best.tarSync).toFixed(0),
          (best.tarSync / best.lspd).toFixed(2),
          spread(paired.tar),
          spread(paired.tarSync),
        ]);
      }
      rmSync(tarPath);
      rmSync(gzPath);
    }
  } finally {
    await daemon.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const head = [
    'case',
    'lspd MB/s',
    'lspd s (syncfs s)',
    'lspd peak RSS MB',
    'tar -x MB/s',
    'lspd/tar',
    'tar -x+sync MB/s',
    'lspd/(tar+sync)',
    'per run: lspd/tar',
    'lspd/(tar+sync)',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  console.log('# MB/s is of the uncompressed tar; RSS is VmHWM of the daemon, reset before each upload.');
  console.log('# Best of the runs on each side; "per run": the median (min-max) of the ratio within each run.');
}

// Run only as a script: bench/push.ts imports the generator.
if (process.argv[1] && import.meta.filename === resolve(process.argv[1])) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
