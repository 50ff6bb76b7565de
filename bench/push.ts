// Question: what does a one-file commit cost to push, whole vs as a layer over its
// parent (PUT ?base=)? The 50 MB and 500 MB trees of bench/upload.ts (its
// generator) are committed to a real git repository, one file is changed and
// committed, and the head is pushed by lspd push's own code (src/cli/push.ts, in
// process, so no CLI start-up is timed) to a spawned daemon holding the parent:
// whole (gzip'd, as `lspd push` sends by default, and plain tar) and incremental.
// Each push is timed from the first git command to the daemon's answer (the root
// durable and visible); disk added is `du` of the data dir before and after (hard
// links counted once). Between runs the head root is deleted.
//
//   node --import tsx bench/push.ts [--sizes 50,500] [--runs 2]
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LspdClient } from '../src/client/index.js';
import { push, type PushOptions } from '../src/cli/push.js';
import { cleanUpOnSignal } from './on-signal.js';
import { spawnDaemon, tempDir } from '../test/helpers/daemon.js';
import { corpus, opt, writeTar } from './upload.js';
import { git } from './git.js';

const MB = 1024 * 1024;
const sizesMb = opt('sizes', '50,500').split(',').map(Number);
const runs = Number(opt('runs', '2'));
const execFileP = promisify(execFile);

async function diskBytes(dir: string): Promise<number> {
  const { stdout } = await execFileP('du', ['-s', '-B1', dir]);
  return Number(stdout.split('\t')[0]);
}

interface Case {
  name: string;
  opts: Partial<PushOptions>;
  repo: (size: number) => string;
}

async function main(): Promise<void> {
  const work = tempDir('push-bench-');
  const text = corpus();
  const daemon = await spawnDaemon({ dataDir: join(work, 'data'), env: { LSPD_MAX_TREE_FILES: '1000000' }, timeoutMs: 120_000 });
  cleanUpOnSignal(daemon, work);
  const client = new LspdClient({ url: daemon.url });
  console.log(
    `# lspd push bench — work dir ${work}, ${runs} runs per case, load average at start ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const rows: string[][] = [];
  try {
    for (const sizeMb of sizesMb) {
      const repo = join(work, `repo-${sizeMb}`);
      mkdirSync(repo);
      const tarPath = join(work, `tree-${sizeMb}.tar`);
      const { files, bytes } = await writeTar(tarPath, sizeMb, text);
      execFileSync('tar', ['-xf', tarPath, '-C', repo]);
      rmSync(tarPath);
      git(repo, 'init', '-q', '-b', 'main');
      git(repo, 'add', '-A');
      git(repo, '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'base');
      const base = git(repo, 'rev-parse', 'HEAD');
      // The one-file commit: a line appended to a small source file.
      appendFileSync(join(repo, 'src/pkg10/file400.ts'), 'export const changed = true;\n');
      git(repo, '-c', 'commit.gpgsign=false', 'commit', '-q', '-am', 'one file');
      const head = git(repo, 'rev-parse', 'HEAD');
      console.log(`# ${sizeMb} MB tree: ${files} files, ${(bytes / MB).toFixed(0)} MB; base ${base.slice(0, 12)}, head ${head.slice(0, 12)}`);

      const name = `t${sizeMb}`;
      const baseRun = await push(client, repo, { org: 'bench', repo: name, sha: base }, { gzip: true, retries: 0, full: true });
      if (!baseRun.answer.created) throw new Error('the base was already stored');

      const cases: Case[] = [
        { name: 'whole, gzip (lspd push --full)', opts: { gzip: true, full: true }, repo: () => name },
        { name: 'whole, tar (--full --no-gzip)', opts: { gzip: false, full: true }, repo: () => name },
        { name: 'incremental (lspd push)', opts: { gzip: true }, repo: () => name },
      ];
      const results = new Map<string, { s: number[]; daemon: string[]; sent: number; disk: number[]; stored: number }>();
      for (let run = 0; run < runs; run++) {
        for (const c of cases) {
          const key = { org: 'bench', repo: c.repo(sizeMb), sha: head };
          const before = await diskBytes(daemon.dataDir);
          const t0 = process.hrtime.bigint();
          const r = await push(client, repo, key, { gzip: true, retries: 0, ...c.opts });
          const s = Number(process.hrtime.bigint() - t0) / 1e9;
          const added = (await diskBytes(daemon.dataDir)) - before;
          if (!r.answer.created) throw new Error(`${c.name}: not created`);
          if (c.opts.full === undefined && r.base !== base) throw new Error(`${c.name}: not sent as a layer over the base`);
          if (r.answer.git_tree !== git(repo, 'rev-parse', `${head}^{tree}`)) throw new Error(`${c.name}: wrong tree`);
          const agg = results.get(c.name) ?? { s: [], daemon: [], sent: r.sentBytes, disk: [], stored: Number(r.answer.stored_bytes ?? NaN) };
          agg.s.push(s);
          // The daemon's own share: the whole PUT, and the syncfs in it (shared with every writer on the disk).
          const stored = daemon.logs.filter((l) => l.msg === 'root stored').at(-1);
          agg.daemon.push(`${(Number(stored?.ms) / 1000).toFixed(2)}/${(Number(stored?.syncMs) / 1000).toFixed(2)}`);
          agg.disk.push(added);
          results.set(c.name, agg);
          await client.deleteRoot(key);
        }
      }
      const best = (xs: number[]) => Math.min(...xs);
      const incr = results.get('incremental (lspd push)')!;
      for (const c of cases) {
        const a = results.get(c.name)!;
        rows.push([
          `${sizeMb} MB`,
          c.name,
          fmtBytes(a.sent),
          (a.sent / incr.sent).toFixed(0),
          best(a.s).toFixed(2),
          a.s.map((x) => x.toFixed(2)).join(' '),
          a.daemon.join(' '),
          (best(a.s) / best(incr.s)).toFixed(1),
          fmtBytes(best(a.disk)),
          fmtBytes(a.stored),
        ]);
      }
      await client.deleteRoot({ org: 'bench', repo: name, sha: base });
      rmSync(repo, { recursive: true, force: true });
    }
  } finally {
    await client.close();
    await daemon.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const headRow = ['tree', 'push', 'bytes sent', 'x incr', 'best s', 'all s', 'daemon s/syncfs s', 'x incr', 'disk added', 'stored_bytes'];
  const widths = headRow.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(headRow));
  for (const r of rows) console.log(line(r));
  console.log(
    `# load average at end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log('# seconds: from the first git command to the daemon\'s answer (root durable and visible), in process; "x incr": best over best;');
  console.log('# daemon s/syncfs s: the PUT as the daemon logged it, per run, and the syncfs in it; disk added: du of the data dir (links counted once).');
}

function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Math.abs(n) >= MB) return `${(n / MB).toFixed(1)} MB`;
  if (Math.abs(n) >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} B`;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
