// Question: what do the edit answers cost on a warm root of a real tree?
// The tree is lspd's own src/ (about 150 TypeScript files) uploaded as one root.
//   check    POST /v1/check of a 1-file patch (shareLimits in src/tenancy/fair-share.ts
//            gains a required parameter, so its callers break), after a first check
//            has started the scratch session: the warm cost. The same patch each
//            run, as an agent re-checking it would send: the scratch session keeps
//            it between checks, so the server builds no new program
//   varied   the same edit with another parameter name each run: a patch the
//            session has not seen, so the server type-checks the files again
//   plain    the diagnostics op on the same files the check answered about, one
//            query per file, 4 at a time as the check asks, each run with another
//            `context` so the result cache does not answer: lspd's plain path
//   rename   /v1/code/lsp op rename of deadline() (src/util/deadline.ts, used across
//            the tree), a new name per run so the result cache does not answer
//   raw      the bare TS 7 server (bench/bare-lsp.ts, on the host: no jail, no CPU
//            cap) over the same tree with the check's files open: the varied run's
//            didChange and a pull of every checked file at once, as the check sends
//            them, beside pulls of the same files unchanged, 4 at a time as plain.
//            How much of the varied ratio is TS's own re-check, which lspd cannot cut
//   narrow   a new required parameter of isAppError in src/errors.ts (another name
//            each run): the file's `errors` is used by about 40 files, isAppError by
//            about 14, and only those can see the patch (src/check/touched.ts); beside,
//            the plain diagnostics of the files it checked
//   stages   each varied check's log line (src/check/check-service.ts `Laps`): where
//            its time went; CPU of the daemon's threads and of its TS 7 jails per
//            check, beside the bare server's (bench/process-cpu.ts, ns)
// Goal (issue 27): a warm check within 3x the plain diagnostics of the same files.
// lspd runs as its own process (src/main.ts); load average printed beside.
//
//   node --import tsx bench/edits.ts [--runs 5]
import { chmodSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execFileSync } from 'node:child_process';
import { LspdClient, type CheckAnswer } from '../src/client/index.js';
import { projectDir, spawnDaemon, tempDir } from '../test/helpers/daemon.js';
import { opt } from './upload.js';
import { cleanUpOnSignal } from './on-signal.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { git } from './git.js';
import { mapLimit } from '../src/ask/ask-service.js';
import { defaultServerPaths } from '../src/lsp/servers/server-row.js';
import { defaultServerRows } from '../src/lsp/servers/server-table.js';
import { BareServer } from './bare-lsp.js';
import { cpuMsOf, descendantsRunning, throttledMsOf } from './process-cpu.js';

const runs = Number(opt('runs', '5'));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const work = tempDir('edits-bench-');
  chmodSync(work, 0o755); // the jail's uids must reach the data dir below it
  const repo = join(work, 'repo');
  cpSync(join(projectDir, 'src'), join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'package.json'), '{"name": "lspd-src", "private": true, "type": "module"}\n');
  cpSync(join(projectDir, 'tsconfig.json'), join(repo, 'tsconfig.json'));
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'base');
  const sha = git(repo, 'rev-parse', 'HEAD');
  // The patch an agent would send: git's own diff of the edited file.
  const file = join(repo, 'src/tenancy/fair-share.ts');
  const text = readFileSync(file, 'utf8');
  const from = 'export function shareLimits(';
  if (!text.includes(from)) throw new Error(`${from} not in src/tenancy/fair-share.ts`);
  const edited = (name: string) => text.replace(from, `export function shareLimits(${name}: string, `);
  const diffOf = (path: string, changed: string) => {
    writeFileSync(join(repo, path), changed);
    const p = git(repo, 'diff') + '\n';
    git(repo, 'checkout', '-q', '--', path);
    return p;
  };
  const patchNamed = (name: string) => diffOf('src/tenancy/fair-share.ts', edited(name));
  const patch = patchNamed('label');
  const errorsText = readFileSync(join(repo, 'src/errors.ts'), 'utf8');
  const errorsFrom = 'export function isAppError(e: unknown';
  if (!errorsText.includes(errorsFrom)) throw new Error(`${errorsFrom} not in src/errors.ts`);
  const narrowPatch = (name: string) => diffOf('src/errors.ts', errorsText.replace(errorsFrom, `export function isAppError(${name}: string, e: unknown`));

  const daemon = await spawnDaemon({ dataDir: join(work, 'data'), env: jailUidEnv(64), timeoutMs: 120_000 });
  cleanUpOnSignal(daemon, work);
  const client = new LspdClient({ url: daemon.url });
  const checkLogs = () => daemon.logs.filter((l) => l.msg === 'check') as { stages?: Record<string, number> }[];
  const root = { org: 'bench', repo: 'lspd-src', sha };
  const files = git(repo, 'ls-files')
    .split('\n')
    .filter((p) => p.endsWith('.ts')).length;
  console.log(`# lspd edits bench — lspd's own src/ (${files} .ts files), ${runs} runs, load average at start ${load()}`);
  const t: Record<string, number[]> = { check: [], varied: [], plain: [], rename: [], rawPlain: [], rawVaried: [], narrow: [], narrowPlain: [] };
  const cpu: Record<string, number[]> = { lspdTs: [], daemon: [], bareTs: [], plainTs: [], plainDaemon: [], throttled: [] };
  const stages: Record<string, number>[] = [];
  let bare: BareServer | undefined;
  try {
    await client.putRoot(root, execFileSync('git', ['archive', '--format=tar', sha], { cwd: repo, maxBuffer: 256 * 1024 * 1024 }));
    let t0 = performance.now();
    const first = await client.check({ ...root, patch });
    console.log(`# first check (starts the scratch session): ${(performance.now() - t0).toFixed(0)} ms; load ${load()}`);
    let last: CheckAnswer = first;
    // The raw floor: the same server on the same files, driven bare, warm like the scratch session.
    bare = new BareServer(
      defaultServerRows(defaultServerPaths()).find((r) => r.name === 'typescript')!,
      repo,
    );
    await bare.initialize();
    const pull = (path: string) => bare!.request('textDocument/diagnostic', { textDocument: { uri: bare!.uri(path) } });
    for (const path of first.files) bare.open(path);
    await Promise.all(first.files.map(pull));
    // CPU: the daemon's threads, and its TS 7 jails (the plain session and the scratch one) as the host sees them.
    const ts = descendantsRunning(daemon.child.pid!, 'typescript-linux-x64/lib/tsc');
    const tsCpu = () => ts.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
    const tsThrottled = () => ts.reduce((sum, pid) => sum + (throttledMsOf(pid) ?? 0), 0);
    const daemonCpu = () => cpuMsOf(daemon.child.pid!);
    for (let run = 0; run < runs; run++) {
      t0 = performance.now();
      last = await client.check({ ...root, patch });
      const check = performance.now() - t0;
      const [p0, pd0] = [tsCpu(), daemonCpu()];
      t0 = performance.now();
      await mapLimit(last.files, 4, (path) => client.lsp({ ...root, op: 'diagnostics', path, context: 1 + (run % 20) }));
      const plain = performance.now() - t0;
      cpu.plainTs!.push(tsCpu() - p0);
      cpu.plainDaemon!.push(daemonCpu() - pd0);
      t0 = performance.now();
      await mapLimit(last.files, 4, pull);
      t.rawPlain!.push(performance.now() - t0);
      t0 = performance.now();
      const r = await client.lsp({
        ...root,
        op: 'rename',
        path: 'src/util/deadline.ts',
        line: lineOf(repo, 'src/util/deadline.ts', 'export function deadline('),
        character: 16,
        newName: `deadline${run}`,
      });
      const rename = performance.now() - t0;
      if (!String(r.patch).includes(`deadline${run}(`)) throw new Error(`run ${run}: the rename's patch does not use its new name`);
      t.check!.push(check);
      t.plain!.push(plain);
      t.rename!.push(rename);
      console.log(
        `# run ${run}: check ${check.toFixed(0)} ms, plain diagnostics of its ${last.files.length} files ${plain.toFixed(0)} ms (x${(check / plain).toFixed(2)}), ` +
          `rename ${rename.toFixed(0)} ms (${(r.files as unknown[] | undefined)?.length ?? 0} files); load ${load()}`,
      );
    }
    // After the runs above: a varied patch leaves the session holding it, so interleaved it would make every same-patch check a new one.
    for (let run = 0; run < runs; run++) {
      const patch = patchNamed(`label${run}`);
      const [ts0, d0, th0] = [tsCpu(), daemonCpu(), tsThrottled()];
      const logs = checkLogs().length;
      t0 = performance.now();
      const other = await client.check({ ...root, patch });
      t.varied!.push(performance.now() - t0);
      cpu.lspdTs!.push(tsCpu() - ts0);
      cpu.daemon!.push(daemonCpu() - d0);
      cpu.throttled!.push(tsThrottled() - th0);
      if (other.new.length !== last.new.length) throw new Error(`run ${run}: the varied patch found ${other.new.length} new, the same one ${last.new.length}`);
      // The check's log line comes over the daemon's stdout, maybe after its answer.
      for (let waited = 0; checkLogs().length === logs && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
      stages.push(checkLogs()[logs]?.stages ?? {});
      const b0 = cpuMsOf(bare.pid);
      t0 = performance.now();
      bare.change('src/tenancy/fair-share.ts', edited(`label${run}`));
      await Promise.all(other.files.map(pull));
      t.rawVaried!.push(performance.now() - t0);
      cpu.bareTs!.push(cpuMsOf(bare.pid) - b0);
      console.log(
        `# varied run ${run}: check ${t.varied!.at(-1)!.toFixed(0)} ms (TS jail CPU ${cpu.lspdTs!.at(-1)!.toFixed(0)} ms, daemon CPU ${cpu.daemon!.at(-1)!.toFixed(0)} ms), ` +
          `raw didChange + pulls ${t.rawVaried!.at(-1)!.toFixed(0)} ms (CPU ${cpu.bareTs!.at(-1)!.toFixed(0)} ms); stages ${JSON.stringify(stages.at(-1))}; load ${load()}`,
      );
    }
    let narrow: CheckAnswer | undefined;
    for (let run = 0; run < runs; run++) {
      t0 = performance.now();
      narrow = await client.check({ ...root, patch: narrowPatch(`why${run}`) });
      t.narrow!.push(performance.now() - t0);
      t0 = performance.now();
      await mapLimit(narrow.files, 4, (path) => client.lsp({ ...root, op: 'diagnostics', path, context: 20 - (run % 10) }));
      t.narrowPlain!.push(performance.now() - t0);
      console.log(
        `# narrow run ${run}: check ${t.narrow!.at(-1)!.toFixed(0)} ms (${narrow.files.length} files, ${narrow.new.length} new, incomplete ${narrow.incomplete}), ` +
          `plain diagnostics of its files ${t.narrowPlain!.at(-1)!.toFixed(0)} ms; load ${load()}`,
      );
    }
    console.log(
      `# the narrow check: ${narrow!.files.length} files, ${narrow!.new.length} new, incomplete ${narrow!.incomplete}${narrow!.notes ? `, notes ${JSON.stringify(narrow!.notes)}` : ''}`,
    );
    console.log(
      `# the check: ${last.files.length} files, ${last.new.length} new, ${last.fixed.length} fixed, ${last.unchanged} unchanged, incomplete ${last.incomplete}`,
    );
    console.log('| what | median ms | runs (ms) |');
    console.log('|---|---|---|');
    const rows: [string, number[]][] = [
      ['lspd check, warm (1-file patch)', t.check!],
      ['lspd check, warm, another patch each run', t.varied!],
      ['lspd diagnostics of the same files, uncached', t.plain!],
      ['lspd rename of deadline() across src/', t.rename!],
      ['lspd check of a new parameter of isAppError (narrow), another each run', t.narrow!],
      ['lspd diagnostics of the narrow check files, uncached', t.narrowPlain!],
      ['raw TS 7: didChange + pull of the same files at once (varied)', t.rawVaried!],
      ['raw TS 7: pull of the same files unchanged, 4 at a time', t.rawPlain!],
      ["CPU of lspd's TS 7 jails per varied check", cpu.lspdTs!],
      ['CPU of the daemon per varied check', cpu.daemon!],
      ["time the CPU cap held lspd's TS 7 jails back per varied check (cpu.stat)", cpu.throttled!],
      ['CPU of the bare TS 7 per raw varied', cpu.bareTs!],
      ["CPU of lspd's TS 7 jails per plain diagnostics of the files", cpu.plainTs!],
      ['CPU of the daemon per plain diagnostics of the files', cpu.plainDaemon!],
    ];
    for (const [name, xs] of rows) console.log(`| ${name} | ${median(xs).toFixed(1)} | ${xs.map((x) => x.toFixed(1)).join(', ')} |`);
    console.log(
      `# stages of the varied check (median ms, src/check/ Laps): ${Object.keys(stages[0] ?? {})
        .map((k) => `${k} ${median(stages.map((x) => x[k] ?? 0)).toFixed(1)}`)
        .join(', ')}`,
    );
    console.log(`# ratio check / plain (medians): ${(median(t.check!) / median(t.plain!)).toFixed(2)} (goal <= 3)`);
    console.log(`# ratio varied check / plain (medians): ${(median(t.varied!) / median(t.plain!)).toFixed(2)}`);
    console.log(`# ratio narrow check / plain of its files (medians): ${(median(t.narrow!) / median(t.narrowPlain!)).toFixed(2)}`);
    const cpuRatio = (median(cpu.lspdTs!) + median(cpu.daemon!)) / (median(cpu.plainTs!) + median(cpu.plainDaemon!));
    console.log(`# CPU ratio varied check / plain (daemon + TS jails, medians): ${cpuRatio.toFixed(2)}`);
    console.log(
      `# raw ratio varied / plain (medians): ${(median(t.rawVaried!) / median(t.rawPlain!)).toFixed(2)}; lspd varied / raw varied ${(median(t.varied!) / median(t.rawVaried!)).toFixed(2)}`,
    );
    console.log(`# load average at end ${load()}`);
  } finally {
    await bare?.stop();
    await client.close();
    await daemon.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

function lineOf(repo: string, path: string, needle: string): number {
  const lines = readFileSync(join(repo, path), 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`${needle} not in ${path}`);
  return i;
}

await main();
