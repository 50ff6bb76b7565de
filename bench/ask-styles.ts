// Question: what does /ask by name cost for what a stylesheet declares, beside the
// one server question it stands for? The CSS server has no workspace symbols, so /ask
// scans the tree for files that mention the name, asks those files' document symbols
// (src/ask/outline.ts) and pins the match; a custom property (no symbol to the server)
// is probed at its declaration and asked for its definition.
// The tree: 300 generated component stylesheets (`.cardN` rules using var(--inkN) and
// an SCSS mixin each) and one tokens file declaring the custom properties.
//   class     /ask {symbol: "cardN"}, another N each run (no cached scan or answer)
//   property  /ask {symbol: "--inkN"}, another N each run
//   raw       /v1/code/lsp documentSymbols of the one file declaring cardN, with
//             query cardN (another each run, so the result cache does not answer):
//             the server question a client that knew the file would ask
// lspd runs as its own process (src/main.ts); load average printed beside.
//
//   node --import tsx bench/ask-styles.ts [--runs 7]
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execFileSync } from 'node:child_process';
import { LspdClient } from '../src/client/index.js';
import { spawnDaemon, tempDir } from '../test/helpers/daemon.js';
import { opt } from './upload.js';
import { cleanUpOnSignal } from './on-signal.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { git } from './git.js';
import { load, median, printRuns } from './figures.js';

const runs = Number(opt('runs', '7'));
const FILES = 300;

async function main(): Promise<void> {
  const work = tempDir('ask-styles-bench-');
  chmodSync(work, 0o755); // the jail's uids must reach the data dir below it
  const repo = join(work, 'repo');
  mkdirSync(join(repo, 'components'), { recursive: true });
  const tokens: string[] = [':root {'];
  for (let i = 0; i < FILES; i++) {
    tokens.push(`  --ink${i}: #${String(i).padStart(6, '0')};`);
    const rule = `.card${i} {\n  color: var(--ink${i});\n  padding: 4px;\n}\n\n.card${i}:hover {\n  color: var(--ink${(i + 1) % FILES});\n}\n`;
    const mixin = `@mixin raised${i}($d) {\n  box-shadow: 0 $d 2px black;\n}\n\n.panel${i} {\n  @include raised${i}(1px);\n}\n`;
    writeFileSync(join(repo, 'components', `card${i}.css`), rule);
    writeFileSync(join(repo, 'components', `panel${i}.scss`), mixin);
  }
  writeFileSync(join(repo, 'tokens.css'), tokens.join('\n') + '\n}\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'base');
  const sha = git(repo, 'rev-parse', 'HEAD');

  const daemon = await spawnDaemon({ dataDir: join(work, 'data'), env: jailUidEnv(64), timeoutMs: 120_000 });
  cleanUpOnSignal(daemon, work);
  const client = new LspdClient({ url: daemon.url });
  const root = { org: 'bench', repo: 'styles', sha };
  console.log(`# lspd /ask on stylesheets — ${2 * FILES + 1} files, ${runs} runs, load average at start ${load()}`);
  const t: Record<string, number[]> = { class: [], property: [], raw: [] };
  try {
    await client.putRoot(root, execFileSync('git', ['archive', '--format=tar', sha], { cwd: repo, maxBuffer: 256 * 1024 * 1024 }));
    let t0 = performance.now();
    await client.ask({ ...root, symbol: 'card0' } as never);
    console.log(`# first /ask (starts the CSS server, scans the tree): ${(performance.now() - t0).toFixed(0)} ms; load ${load()}`);
    for (let run = 1; run <= runs; run++) {
      const n = run * 37;
      t0 = performance.now();
      const c = await client.ask({ ...root, symbol: `card${n}` } as never);
      t.class!.push(performance.now() - t0);
      const cl = (c.locations as { path: string }[] | undefined)?.map((l) => l.path);
      if (cl?.length !== 1 || cl[0] !== `components/card${n}.css`) throw new Error(`card${n}: ${JSON.stringify(c)}`);
      t0 = performance.now();
      const p = await client.ask({ ...root, symbol: `--ink${n}` } as never);
      t.property!.push(performance.now() - t0);
      const pl = (p.locations as { path: string; range: { start: { line: number } } }[] | undefined)?.map((l) => `${l.path}:${l.range.start.line}`);
      if (pl?.length !== 1 || pl[0] !== `tokens.css:${n + 1}`) throw new Error(`--ink${n}: ${JSON.stringify(p)}`);
      t0 = performance.now();
      await client.lsp({ ...root, op: 'documentSymbols', path: `components/card${n}.css`, query: `card${n}` } as never);
      t.raw!.push(performance.now() - t0);
      console.log(
        `# run ${run}: class ${t.class!.at(-1)!.toFixed(0)} ms, property ${t.property!.at(-1)!.toFixed(0)} ms, raw ${t.raw!.at(-1)!.toFixed(0)} ms; load ${load()}`,
      );
    }
    printRuns([
      ['lspd /ask of a class rule', t.class!],
      ['lspd /ask of a custom property', t.property!],
      ["lspd documentSymbols of the class's file (raw question)", t.raw!],
    ]);
    const ratio = (xs: number[]) => (median(xs) / median(t.raw!)).toFixed(1);
    console.log(`# ratios to raw (medians): class ${ratio(t.class!)}, property ${ratio(t.property!)}; load average at end ${load()}`);
  } finally {
    await client.close();
    await daemon.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
