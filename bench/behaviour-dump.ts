// Not a benchmark: a dump of what a refactor must leave equal, to diff before and after.
//   node --import tsx bench/behaviour-dump.ts > before.json   (then again after; diff)
//   --openapi: also start a real daemon and include its /docs/json (slower: the canary runs).
// What it holds: every server row (functions by name; each row's whole SERVE bwrap argv
// for a fixed session), each fetch ecosystem's record and FETCH spawn for a fixed tree
// (whole bwrap argv), both phase policies (plain and over a system root), the metrics
// registry (names, helps, types, labels, buckets), and with --openapi the OpenAPI document.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundHostPaths, phasePolicy, withSystemRoot } from '../src/jail/policy.js';
import { TREE_AT } from '../src/jail/layout.js';
import type { Bind, Phase } from '../src/jail/types.js';
import { createMetrics } from '../src/metrics.js';
import { ecosystemTable } from '../src/fetch/ecosystems/table.js';
import { LogTail } from '../src/fetch/log-tail.js';
import { defaultServerRows } from '../src/lsp/servers/server-table.js';
import { defaultServerPaths } from '../src/lsp/servers/server-row.js';
import { projectDir, spawnDaemon } from '../test/helpers/daemon.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { FIXED_HOST, fullJailArgv } from '../test/helpers/jail-argv.js';

const host = FIXED_HOST;

/** JSON with functions named, regexps as source, undefined kept visible. */
function plain(v: unknown): unknown {
  if (typeof v === 'function') return `[function ${v.name || 'anonymous'}]`;
  if (v instanceof RegExp) return `[regexp ${v.source}]`;
  if (v === undefined) return '[undefined]';
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

const policies = (phase: Phase) => phasePolicy(phase, host);

async function rows(): Promise<unknown> {
  const paths = { ...defaultServerPaths('/opt/lspd/debian13'), nodeModulesHost: '/opt/proj/node_modules' };
  return defaultServerRows(paths).map((row) => {
    const policy = row.systemRoot ? withSystemRoot(policies('serve'), row.systemRoot) : policies('serve');
    const record = ecosystemTable.find((e) => e.name === row.ecosystem);
    const depBinds: Bind[] = [{ host: '/data/deps/x', at: '/deps/x' }];
    const depEnv = record?.serveEnv?.(depBinds) ?? {};
    const fetchedEnv =
      record?.serveEnv?.([{ at: '/deps/go/pkg/mod' }, { at: '/deps/cargo' }, { at: '/deps/python/top/site-packages' }, { at: '/deps/npm/top/node_modules' }]) ??
      {};
    return {
      row: plain({
        ...row,
        initializationOptions: typeof row.initializationOptions === 'function' ? row.initializationOptions('/src/ws') : row.initializationOptions,
        dependencySettings: row.dependencySettings?.([{ host: '/h', at: '/deps/python/top/site-packages' }]),
      }),
      // What a session runs: row env under the ecosystem's SERVE env (session.ts), row binds, the tree, cwd.
      effectiveEnv: { ...policy.env, ...row.env, ...depEnv },
      fetchedServeEnv: fetchedEnv,
      serveArgv: fullJailArgv(policy, {
        argv: row.argv,
        env: { ...row.env, ...depEnv },
        binds: [...(row.binds ?? []), ...depBinds],
        tree: { at: TREE_AT },
        cwd: `${TREE_AT}/ws`,
      }),
    };
  });
}

async function ecosystems(): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-dump-'));
  try {
    const tree = join(dir, 'tree');
    const files: Record<string, string> = {
      'go.mod': 'module example.com/x\n\ngo 1.22\n',
      'go.sum': '',
      'package.json': '{"name":"x","version":"1.0.0"}',
      'package-lock.json': '{"name":"x","lockfileVersion":3,"packages":{"":{"name":"x"}}}',
      'composer.json': '{"name":"a/b","require":{"c/d":"1.0"},"scripts":{"x":"rm -rf /"}}',
      'composer.lock': JSON.stringify({
        packages: [{ name: 'c/d', version: '1.0', dist: { type: 'zip', url: 'https://x/c.zip', reference: 'r' }, source: { type: 'git' } }],
      }),
      'requirements.txt': 'six==1.16.0\n',
      'Cargo.toml': '[package]\nname="x"\nversion="0.1.0"\n',
      'Cargo.lock': 'version = 3\n',
    };
    for (const ws of ['', 'sub/ws']) {
      mkdirSync(join(tree, ws), { recursive: true });
      for (const [f, text] of Object.entries(files)) writeFileSync(join(tree, ws, f), text);
    }
    const out: unknown[] = [];
    for (const record of ecosystemTable) {
      for (const ws of ['', 'sub/ws']) {
        const depsDir = join(dir, `deps-${record.name}-${ws.replace('/', '_')}`);
        mkdirSync(depsDir);
        const ctx = {
          treeDir: tree,
          depsDir,
          goProxy: 'https://proxy.golang.org,file:///srv/goproxy',
          npmRegistry: 'https://registry.npmjs.org/',
          pipIndexUrl: 'http://127.0.0.1:9/simple',
          composerRepo: 'https://mirror.example/composer',
          cargoRegistry: 'sparse+https://index.crates.io/',
          tools: {
            go: '/usr/bin/go',
            npm: '/usr/share/nodejs/npm/bin/npm-cli.js',
            node: '/usr/bin/node',
            composer: '/usr/bin/composer',
            php: '/usr/bin/php',
            python: '/usr/bin/python3',
            pip: '/usr/bin/pip3',
            cargo: '/usr/bin/cargo',
            cargoRoot: '/opt/lspd/debian13',
          },
          log: new LogTail(4096),
        };
        const spawn = await record.prepare(ctx as never, ws);
        const policy = spawn.systemRoot ? withSystemRoot(policies('fetch'), spawn.systemRoot) : policies('fetch');
        const scrub = (v: unknown) => JSON.parse(JSON.stringify(v).replaceAll(dir, '<tmp>')) as unknown;
        out.push({
          name: record.name,
          ws,
          record: plain({ ...record, outputRel: record.outputRel(ws) }),
          spawn: scrub(spawn),
          fetchArgv: scrub(fullJailArgv(policy, spawn)),
        });
      }
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function policyDump(): unknown {
  return {
    serve: policies('serve'),
    fetch: policies('fetch'),
    serveRooted: withSystemRoot(policies('serve'), '/opt/lspd/debian13'),
    fetchRooted: withSystemRoot(policies('fetch'), '/opt/lspd/debian13'),
    boundHostPaths: boundHostPaths(host),
    bareArgv: Object.fromEntries((['serve', 'fetch'] as const).map((p) => [p, fullJailArgv(policies(p), { argv: ['/usr/bin/true'] })])),
  };
}

function metricsDump(): unknown {
  const { registry } = createMetrics();
  return registry.getMetricsAsArray().map((m) => {
    const x = m as unknown as { name: string; help: string; type?: string; labelNames?: string[]; upperBounds?: number[]; constructor: { name: string } };
    return { name: x.name, help: x.help, kind: x.constructor.name, labelNames: x.labelNames, buckets: x.upperBounds };
  });
}

async function openapi(): Promise<unknown> {
  const d = await spawnDaemon({ env: { ...jailUidEnv(8) } });
  try {
    const r = await fetch(`${d.url}/docs/json`);
    return await r.json();
  } finally {
    await d.stop();
    d.cleanup();
  }
}

const dump = {
  projectDir: projectDir === process.cwd() ? '<cwd>' : projectDir,
  rows: await rows(),
  ecosystems: await ecosystems(),
  policies: policyDump(),
  metrics: metricsDump(),
  ...(process.argv.includes('--openapi') ? { openapi: await openapi() } : {}),
};
process.stdout.write(JSON.stringify(dump, null, 1) + '\n');
