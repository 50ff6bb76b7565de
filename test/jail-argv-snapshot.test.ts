// The whole bwrap command line of a SERVE and a FETCH jail, for fixed inputs (a
// fixed host, real server rows, real fetch records over a small tree), compared
// with test/jail-argv.snapshot.json: any change to what a jail sees (a bind, a
// mount, a namespace, an environment variable, their order) shows here as a diff
// to review. After a deliberate change: LSPD_UPDATE_SNAPSHOT=1 rewrites the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JAIL_NODE_MODULES, TREE_AT } from '../src/jail/layout.js';
import { phasePolicy, withSystemRoot } from '../src/jail/policy.js';
import { LogTail } from '../src/fetch/log-tail.js';
import { recordOf } from '../src/fetch/ecosystems/table.js';
import type { StepContext } from '../src/fetch/step.js';
import type { Ecosystem } from '../src/fetch/types.js';
import { defaultServerRows } from '../src/lsp/servers/server-table.js';
import type { ServerRow } from '../src/lsp/servers/server-row.js';
import { FIXED_HOST, fullJailArgv, groupArgv } from './helpers/jail-argv.js';

const SNAPSHOT = join(import.meta.dirname, 'jail-argv.snapshot.json');
const ROOT13 = '/opt/lspd/debian13';
const rows = defaultServerRows({ nodeModulesHost: '/opt/proj/node_modules', nodeModulesAt: JAIL_NODE_MODULES, debian13Root: ROOT13 });

/** A session of `row` on workspace `ws`, as session.ts spawns it, with the ecosystem's dependencies at `depAt`. */
function serveArgv(name: string, ws: string, depAt?: string): string[] {
  const row = rows.find((r) => r.name === name) as ServerRow;
  const depBinds = depAt ? [{ host: `/data/roots/acme/api/deps${depAt}`, at: depAt }] : [];
  const depEnv = (row.ecosystem && recordOf(row.ecosystem)?.serveEnv?.(depBinds)) || {};
  const base = phasePolicy('serve', FIXED_HOST);
  const policy = row.systemRoot ? withSystemRoot(base, row.systemRoot) : base;
  return fullJailArgv(policy, {
    argv: row.argv,
    env: { ...row.env, ...depEnv },
    binds: [...(row.binds ?? []), ...depBinds],
    tree: { at: TREE_AT },
    cwd: ws === '' ? TREE_AT : `${TREE_AT}/${ws}`,
  });
}

const TREE_FILES: Record<string, string> = {
  'go.mod': 'module example.com/x\n\ngo 1.22\n',
  'go.sum': '',
  'composer.json': '{"name":"a/b","require":{"c/d":"1.0"}}',
  'composer.lock': JSON.stringify({ packages: [{ name: 'c/d', version: '1.0', dist: { type: 'zip', url: 'https://x.example/c.zip', reference: 'r' } }] }),
  'requirements.txt': 'six==1.16.0\n',
  'Cargo.toml': '[package]\nname = "x"\nversion = "0.1.0"\n',
  'Cargo.lock': 'version = 3\n',
};

/** The FETCH jail of `ecosystem` on workspace `ws` of a small tree, as fetch-job.ts spawns it; host temp dirs shown as <tmp>. */
async function fetchArgv(ecosystem: Ecosystem, ws: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-argv-'));
  try {
    const treeDir = join(dir, 'tree');
    mkdirSync(join(treeDir, ws), { recursive: true });
    for (const [f, text] of Object.entries(TREE_FILES)) writeFileSync(join(treeDir, ws, f), text);
    mkdirSync(join(dir, 'deps'));
    const ctx: StepContext = {
      treeDir,
      depsDir: join(dir, 'deps'),
      goProxy: 'https://proxy.golang.org,file:///srv/goproxy',
      npmRegistry: 'https://registry.npmjs.org/',
      pipIndexUrl: 'https://pypi.org/simple',
      composerRepo: 'https://repo.packagist.org',
      cargoRegistry: 'sparse+https://index.crates.io/',
      tools: {
        go: '/usr/bin/go',
        php: '/usr/bin/php8.2',
        composer: '/usr/share/php/composer.phar',
        python: '/usr/bin/python3',
        pip: '/usr/bin/pip',
        cargo: '/usr/bin/cargo',
        cargoRoot: ROOT13,
      },
      log: new LogTail(4096),
    };
    const spawn = await recordOf(ecosystem)!.prepare(ctx, ws);
    const base = phasePolicy('fetch', FIXED_HOST);
    const policy = spawn.systemRoot ? withSystemRoot(base, spawn.systemRoot) : base;
    return fullJailArgv(policy, spawn).map((t) => t.replaceAll(dir, '<tmp>'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function current(): Promise<Record<string, ReturnType<typeof groupArgv>>> {
  const cases: [string, string[] | Promise<string[]>][] = [
    ['serve: gopls over the fetched module cache', serveArgv('gopls', 'svc', '/deps/go/pkg/mod')],
    ['serve: typescript-language-server (its own TypeScript bound)', serveArgv('typescript-language-server', '')],
    ['serve over the Debian 13 root: rust-analyzer over the fetched CARGO_HOME', serveArgv('rust-analyzer', '', '/deps/cargo')],
    ['fetch: go mod download (a file:// proxy bound)', fetchArgv('go', 'svc')],
    ['fetch: pip through the driver', fetchArgv('python', '')],
    ['fetch: composer install', fetchArgv('composer', '')],
    ['fetch over the Debian 13 root: cargo fetch', fetchArgv('cargo', 'crates/x')],
  ];
  const out: Record<string, ReturnType<typeof groupArgv>> = {};
  for (const [name, argv] of cases) out[name] = groupArgv(await argv);
  return out;
}

/** One option per line, so a diff of the file names the option that changed. */
function render(snap: Record<string, ReturnType<typeof groupArgv>>): string {
  const cases = Object.entries(snap).map(
    ([name, { options, command }]) =>
      `  ${JSON.stringify(name)}: {\n    "options": [\n${options.map((o) => `      ${JSON.stringify(o)}`).join(',\n')}\n    ],\n    "command": ${JSON.stringify(command)}\n  }`,
  );
  return `{\n${cases.join(',\n')}\n}\n`;
}

test('every phase’s whole bwrap argv equals the snapshot', async () => {
  const now = await current();
  // Test-only switch, read here and nowhere in src/: rewrite the snapshot after a reviewed change.
  if (process.env.LSPD_UPDATE_SNAPSHOT === '1') {
    assert.notEqual(process.env.CI, 'true', 'CI never rewrites the snapshot: it checks it');
    writeFileSync(SNAPSHOT, render(now));
  }
  const expected = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as typeof now;
  assert.deepEqual(Object.keys(now), Object.keys(expected));
  for (const name of Object.keys(expected)) assert.deepEqual(now[name], expected[name], name);
  // The file is exactly what render() writes, so an update shows as a readable diff.
  assert.equal(readFileSync(SNAPSHOT, 'utf8'), render(expected));
});
