// `lspd jail --phase serve|fetch [--tree DIR] [--cwd DIR] [--root13] [--env K=V]... -- CMD [ARG...]`
// Runs one command in exactly the jail lspd gives language servers (SERVE) or
// dependency fetchers (FETCH), after the same boot canary, for an operator who needs
// to see why a server fails in there. The tree appears at /src. stdin/stdout are
// the command's (--root13: over the Debian 13 root's /usr, as the Rust row and cargo run); stderr shows the command's stderr live; lspd's own log goes to
// stderr too. Exit status: the command's, or 3 when the phase is not proved.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { ConfigError, loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { createJail } from '../jail/jail.js';

import type { Phase } from '../jail/types.js';
import { TREE_AT } from '../jail/layout.js';

const USAGE = 'usage: lspd jail --phase serve|fetch [--tree DIR] [--cwd DIR] [--root13] [--env K=V]... -- CMD [ARG...]\n';

function parseArgs(argv: string[]): { phase: Phase; tree?: string; cwd?: string; root13: boolean; env: Record<string, string>; cmd: string[] } | string {
  let phase: Phase | undefined;
  let tree: string | undefined;
  let cwd: string | undefined;
  const env: Record<string, string> = {};
  let root13 = false;
  let i = 0;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    if (a === '--root13') {
      root13 = true;
      continue;
    }
    if (a === '--phase' && (v === 'serve' || v === 'fetch')) phase = v;
    else if (a === '--tree' && v) tree = resolve(v);
    else if (a === '--cwd' && v) cwd = v;
    else if (a === '--env' && v && /^[A-Za-z_][A-Za-z0-9_]*=/.test(v)) env[v.slice(0, v.indexOf('='))] = v.slice(v.indexOf('=') + 1);
    else if (a === '--help' || a === '-h') return '';
    else return `unknown or incomplete option ${a}`;
    i++;
  }
  const cmd = argv.slice(i + 1);
  if (!phase) return '--phase serve|fetch is required';
  if (cmd.length === 0) return 'no command after --';
  if (!cmd[0]!.startsWith('/')) return `the command must be an absolute path inside the jail (e.g. /usr/bin/${cmd[0]})`;
  return { phase, ...(tree ? { tree } : {}), ...(cwd ? { cwd } : {}), root13, env, cmd };
}

/** Run `lspd jail ARGS`; resolves with the exit status (the CLI dispatcher may call this). */
export async function runJailCli(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(args ? `lspd jail: ${args}\n${USAGE}` : USAGE);
    return 2;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`lspd jail: bad configuration: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, pino.destination(2));
  const jail = await createJail({ config, log: log.child({ mod: 'jail' }), metrics: createMetrics() });
  const verdicts = await jail.canary();
  const verdict = verdicts[args.phase];
  if (!verdict.ok) {
    process.stderr.write(`lspd jail: the ${args.phase} jail is not proved: ${verdict.reason}\n`);
    await jail.close();
    return 3;
  }
  const ac = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => ac.abort());
  const j = await jail.spawn({
    phase: args.phase,
    argv: args.cmd,
    env: args.env,
    ...(args.tree ? { tree: { hostDir: args.tree, at: TREE_AT } } : {}),
    ...(args.cwd ? { cwd: args.cwd } : {}),
    ...(args.root13 ? { systemRoot: config.debian13Root } : {}),
    signal: ac.signal,
    onStderr: (d) => process.stderr.write(d),
  });
  process.stdin.pipe(j.stdin);
  j.stdin.on('error', () => {});
  j.stdout.pipe(process.stdout);
  const exit = await j.exited;
  process.stdin.unpipe(j.stdin);
  process.stdin.destroy();
  await jail.close();
  return exit.code ?? 128 + 9;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runJailCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`lspd jail: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
