// What one ecosystem fetcher is: host-side preparation that turns a workspace
// into a FETCH-jail spawn, and the layout of a root's dependency dir that the
// fetchers, the manager and the SERVE-side binds all agree on.
//
// <deps>/fetch.json        the fetch's state; the daemon's alone, never bound into a jail
// <deps>/go/pkg/mod        GOMODCACHE, shared by every Go module of the root; its
//                          cache/download/ files are links to the org's package store
//                          (what keeps them stored: go-modules.ts)
// <deps>/npm/top/          for the tree's top directory: package.json + lockfile
//                          copies, and the node_modules npm ci builds
// <deps>/npm/ws/<ws>/      the same for workspace dir <ws> (kept under ws/ so no
//                          directory name can collide with `top`)
// <deps>/npm-cache/        npm's download cache during the fetch; removed after it
// <deps>/composer/top/, <deps>/composer/ws/<ws>/
//                          composer.json + composer.lock copies (sanitized), and
//                          the vendor/ composer install builds
// <deps>/composer-cache/   composer's download cache during the fetch; removed after it
// <deps>/python/top/, <deps>/python/ws/<ws>/
//                          site-packages/ (pip --target: wheels only) and
//                          report.json (what was installed, what skipped and why)
// <deps>/cargo/           CARGO_HOME of every Cargo workspace of the root (config.toml
//                          written by lspd, registry index cache, .crate files, sources)
// <deps>/python-tmp/       pip's temp dir during the fetch (wheels can outgrow the
//                          jail's tmpfs; wheels/ the driver's downloads); removed after it
// <deps>/python-store/     links to the org's stored wheels the lock names, root's,
//                          bound read-only during the fetch; removed after it
// <deps>/package-refs/<kind>/ links to the org's package store's archives (npm, python,
//                          composer) the root's lockfiles named (what keeps them
//                          stored); the daemon's alone, never bound (store-entries.ts)
//
// The in-jail names mirror these under /deps, as src/lsp/answer/paths.ts lays them out
// for sessions (DEPS_AT, GOMODCACHE_AT, npmModulesAt): keep the two in step.
// Each step binds read-write only the subdirectory it writes, so no jailed
// fetcher can reach the state file or another ecosystem's output.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { DEPS_AT } from '../jail/layout.js';
import type { Bind } from '../jail/types.js';
import type { LogTail } from './log-tail.js';
import type { JobPackages } from './package-job.js';
import type { Ecosystem, Toolchains } from './types.js';

export const STATE_FILE = 'fetch.json';
export const GO_MODCACHE_REL = 'go/pkg/mod';
export const NPM_CACHE_REL = 'npm-cache';
export const COMPOSER_CACHE_REL = 'composer-cache';
export const PYTHON_TMP_REL = 'python-tmp';
/** The org's stored wheels laid out for the job (python-wheels.ts), bound read-only. */
export const PYTHON_STORE_REL = 'python-store';
export const CARGO_HOME_REL = 'cargo';

/** <deps>-relative dir of an npm workspace's install ('' is the tree's top). */
export function npmRel(ws: string): string {
  return wsRel('npm', ws);
}

/** <deps>-relative dir of `ecosystem`'s output for workspace `ws`: <eco>/top or <eco>/ws/<ws>. */
export function wsRel(ecosystem: Ecosystem, ws: string): string {
  return ws === '' ? `${ecosystem}/top` : `${ecosystem}/ws/${ws}`;
}

/** The config settings fetchers read (their registries; config.ts says what each is): the manager hands every job these. */
export const REGISTRY_SETTINGS = ['goProxy', 'npmRegistry', 'pipIndexUrl', 'composerRepo', 'cargoRegistry'] as const;
export type RegistrySettings = Pick<Config, (typeof REGISTRY_SETTINGS)[number]>;

export interface StepContext extends RegistrySettings {
  treeDir: string;
  depsDir: string;
  tools: Toolchains;
  /** Notes for the caller (why a bind was skipped, …) go here, scrubbed later. */
  log: LogTail;
  /** The org's package store, for this job (absent: none, as when the daemon is not root). */
  packages?: JobPackages;
}

/**
 * A jail spawn minus what the runner adds (phase, signal, stderr ring). `env` is the
 * fetcher's own, laid over the FETCH jail's (layout.ts jailEnv('fetch'): PATH, a
 * private HOME and TMPDIR, HTTP(S)_PROXY to the in-jail forwarder, plain output).
 */
export interface StepSpawn {
  argv: string[];
  env: Record<string, string>;
  binds: Bind[];
  tree?: { hostDir: string; at: string };
  cwd: string;
  /** The system root whose /usr the jail sees (cargo: the Debian 13 root). */
  systemRoot?: string;
  /** Locked dependencies the fetcher left out before running, each named with why (StepStatus.skipped). */
  skipped?: string[];
}

/** A mount the SERVE side should make once the fetch is done (validated: plain dirs, no links). */
export interface ServeMount {
  host: string;
  /** Absolute in-jail path, or (treeRel) a path relative to wherever the session binds the tree. */
  at: string;
  treeRel: boolean;
}

/**
 * A <deps> dir a step writes (its workspace's output, or a scratch dir), made on
 * the host, as the read-write bind that puts it at the same place under /deps.
 */
export async function writableDepsDir(ctx: StepContext, rel: string): Promise<Bind & { rw: true }> {
  const host = join(ctx.depsDir, rel);
  await mkdir(host, { recursive: true });
  return { host, at: `${DEPS_AT}/${rel}`, rw: true };
}

/** Join '/'-separated relative parts where '' means "here": under('', 'x') is 'x', under('/src', '') is '/src'. */
export function under(base: string, rel: string): string {
  if (rel === '') return base;
  return base === '' ? rel : `${base}/${rel}`;
}
