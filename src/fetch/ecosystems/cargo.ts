// Cargo: `cargo fetch --locked` per workspace into one CARGO_HOME per root (../cargo.ts has the why).
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cargoHint, cargoServeEnv, cargoServeMounts, prepareCargo } from '../cargo.js';
import { CARGO_HOME_AT } from '../../jail/layout.js';
import { registryReason } from '../registry-reason.js';
import { CARGO_HOME_REL } from '../step.js';
import { baseName, fetchIt, refuse, type DetectDir, type EcosystemRecord } from './record.js';

/** Any Cargo.toml/Cargo.lock anywhere: a workspace's members and path dependencies sit in other dirs, and all share CARGO_HOME. */
const INPUTS = new Set(['Cargo.toml', 'Cargo.lock']);

const MISSING =
  'Rust dependencies were not fetched: the Debian 13 root with the pinned cargo is not made (images/setup.sh makes it; a per-user rustup cargo is not pinned).';
const NO_LOCK = 'Rust dependencies were not fetched: Cargo.toml has no Cargo.lock, and without a lock file a fetch would resolve versions at fetch time.';

/**
 * A top-level Cargo.toml without a lock is reported only when it names dependencies
 * ([dependencies], [dev-dependencies], [build-dependencies], a target's, or a
 * workspace's): a crate with none needs nothing. A line scan, not a TOML parse: it
 * only decides whether to say why nothing was fetched.
 */
async function bare({ treeDir, dir, files }: DetectDir): Promise<boolean> {
  if (dir !== '' || !files.has('Cargo.toml') || files.has('Cargo.lock')) return false;
  const file = join(treeDir, 'Cargo.toml');
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.size > 4 * 1024 * 1024) return false;
  const text = await readFile(file, 'utf8').catch(() => '');
  let inDeps = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      const header = line.replace(/\s+/g, '');
      // [dependencies.serde]: a dependency of its own table.
      if (/^\[(?:workspace\.|target\..*\.)?(?:dev-|build-)?dependencies\.[A-Za-z0-9_-]+\]$/.test(header)) return true;
      inDeps = /^\[(?:workspace\.|target\..*\.)?(?:dev-|build-)?dependencies\]$/.test(header);
      continue;
    }
    if (inDeps && /^[A-Za-z0-9_-]+\s*(?:\.|=)/.test(line)) return true;
  }
  return false;
}

export const cargo: EcosystemRecord = {
  name: 'cargo',
  command: 'cargo fetch',
  // The sparse index, and the crate downloads its config.json names (`dl`).
  defaultHosts: ['index.crates.io:443', 'static.crates.io:443'],
  lockfiles: ['Cargo.toml', 'Cargo.lock'],
  // A workspace's Cargo.lock sits beside its root Cargo.toml and covers every member.
  detect: async (d, tools) => {
    if (d.files.has('Cargo.lock') && d.files.has('Cargo.toml')) return tools.cargo && tools.cargoRoot ? fetchIt : refuse(MISSING);
    return (await bare(d)) ? refuse(NO_LOCK) : undefined;
  },
  outputDir: CARGO_HOME_REL,
  prepare: prepareCargo,
  // cargo's own sentences first (a stale lock, a checksum), then the proxy's status (registry-reason.ts).
  hint: (output) => cargoHint(output) ?? registryReason(output),
  // One CARGO_HOME for every workspace of the root: one unit for reuse, as Go's module cache is.
  outputRel: () => CARGO_HOME_REL,
  serveMounts: (_tree, depsDir) => cargoServeMounts(depsDir),
  serveEnv: (binds) => cargoServeEnv(binds.some((b) => b.at === CARGO_HOME_AT)),
  readsInput: (path) => INPUTS.has(baseName(path)),
};
