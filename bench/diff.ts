// Question: what does POST /v1/diff cost on a real tree, cold and cached?
// The tree is lspd's own src/ (about 150 TypeScript files) committed to a git
// repository; head changes one widely used function's signature (deadline() in
// src/util/deadline.ts gains a required parameter), so the diff has real impact and
// real new errors. Per run, fresh commits (new roots, so new sessions):
//   cold    the first diff of base..head: TS 7 sessions start on both roots,
//           documentSymbols, references at base, diagnostics at both
//   warm    base..head2 (another function changed): base's session is up, head2's not
//   cached  base..head again: the diff cache answers
// Beside it, the raw tools a CI job would otherwise run on the same commits:
// `git diff --name-status` and a whole `tsc --noEmit` of head (TypeScript 5.9).
// lspd runs as its own process (src/main.ts); load average printed at start and end.
//
//   node --import tsx bench/diff.ts [--runs 3]
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LspdClient, type DiffAnswer } from '../src/client/index.js';
import { projectDir, spawnDaemon, tempDir } from '../test/helpers/daemon.js';
import { opt } from './upload.js';
import { cleanUpOnSignal } from './on-signal.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { git } from './git.js';

const runs = Number(opt('runs', '3'));
const commit = (cwd: string, m: string) => (
  git(cwd, 'add', '-A'),
  git(cwd, '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', m),
  git(cwd, 'rev-parse', 'HEAD')
);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function edit(file: string, from: string, to: string): void {
  const text = readFileSync(file, 'utf8');
  if (!text.includes(from)) throw new Error(`${from} not in ${file}`);
  writeFileSync(file, text.replace(from, to));
}

async function main(): Promise<void> {
  const work = tempDir('diff-bench-');
  // The jail's uids must be able to reach the data dir below it (the canary checks).
  chmodSync(work, 0o755);
  const repo = join(work, 'repo');
  cpSync(join(projectDir, 'src'), join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'package.json'), '{"name": "lspd-src", "private": true, "type": "module"}\n');
  cpSync(join(projectDir, 'tsconfig.json'), join(repo, 'tsconfig.json'));
  git(repo, 'init', '-q', '-b', 'main');
  const daemon = await spawnDaemon({ dataDir: join(work, 'data'), env: jailUidEnv(64), timeoutMs: 120_000 });
  cleanUpOnSignal(daemon, work);
  const client = new LspdClient({ url: daemon.url });
  const files = git(repo, 'ls-files', '--others')
    .split('\n')
    .filter((p) => p.endsWith('.ts')).length;
  console.log(`# lspd diff bench — lspd's own src/ (${files} .ts files), ${runs} runs, load average at start ${load()}`);
  const t: Record<string, number[]> = { cold: [], warm: [], cached: [], gitDiff: [], tsc: [] };
  let last: DiffAnswer | undefined;
  try {
    for (let run = 0; run < runs; run++) {
      writeFileSync(join(repo, 'BENCH_RUN'), `${run} ${Date.now()}\n`);
      const base = commit(repo, `base ${run}`);
      edit(
        join(repo, 'src/util/deadline.ts'),
        'export function deadline(outer: AbortSignal, ms: number): Deadline {',
        'export function deadline(outer: AbortSignal, ms: number, label: string): Deadline {',
      );
      const head = commit(repo, `head ${run}`);
      git(repo, 'checkout', '-q', base);
      edit(join(repo, 'src/tenancy/fair-share.ts'), 'export function shareLimits(', 'export function shareLimits(_unused: boolean, ');
      const head2 = commit(repo, `head2 ${run}`);
      git(repo, 'checkout', '-q', '-B', 'main', base);
      for (const sha of [base, head, head2]) {
        await client.putRoot(
          { org: 'bench', repo: 'lspd-src', sha },
          execFileSync('git', ['archive', '--format=tar', sha], { cwd: repo, maxBuffer: 256 * 1024 * 1024 }),
        );
      }
      const timed = async (h: string): Promise<[number, DiffAnswer]> => {
        const t0 = performance.now();
        const a = await client.diff({ org: 'bench', repo: 'lspd-src', base, head: h });
        return [performance.now() - t0, a];
      };
      const [cold, a] = await timed(head);
      const [warm] = await timed(head2);
      const [cached, again] = await timed(head);
      if (again.cached !== true) throw new Error('the second diff was not served from the cache');
      if (a.incomplete) console.log(`# run ${run}: the cold answer was incomplete`);
      t.cold!.push(cold);
      t.warm!.push(warm);
      t.cached!.push(cached);
      last = a;

      let t0 = performance.now();
      git(repo, 'diff', '--name-status', base, head);
      t.gitDiff!.push(performance.now() - t0);
      const tree = join(work, `tsc-${run}`);
      execFileSync('sh', ['-c', `mkdir -p '${tree}' && git archive --format=tar ${head} | tar -x -C '${tree}'`], { cwd: repo });
      t0 = performance.now();
      try {
        execFileSync(process.execPath, [join(projectDir, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', tree], { stdio: 'ignore' });
      } catch {
        /* errors expected: the tree has no node_modules, and head breaks deadline()'s callers */
      }
      t.tsc!.push(performance.now() - t0);
      rmSync(tree, { recursive: true, force: true });
      console.log(`# run ${run}: cold ${cold.toFixed(0)} ms, warm ${warm.toFixed(0)} ms, cached ${cached.toFixed(1)} ms; load ${load()}`);
    }
    if (last) {
      console.log(
        `# the answer: ${last.files_total} file(s), ${last.symbols_total} symbol change(s), impact ${last.total} references, ` +
          `${last.diagnostics_total} new diagnostics (${last.new_errors} errors), incomplete ${last.incomplete}`,
      );
    }
    console.log('| what | median ms | runs (ms) |');
    console.log('|---|---|---|');
    const row = (name: string, xs: number[]) => console.log(`| ${name} | ${median(xs).toFixed(1)} | ${xs.map((x) => x.toFixed(1)).join(', ')} |`);
    row('lspd diff, cold (sessions start on both roots)', t.cold!);
    row('lspd diff, warm base session, new head', t.warm!);
    row('lspd diff, cached', t.cached!);
    row('raw: git diff --name-status', t.gitDiff!);
    row('raw: tsc --noEmit of head (TS 5.9, whole tree)', t.tsc!);
    console.log(`# load average at end ${load()}`);
  } finally {
    await client.close();
    await daemon.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
