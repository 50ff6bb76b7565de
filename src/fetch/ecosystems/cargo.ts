// Cargo: `cargo fetch --locked` per workspace into one CARGO_HOME per root (../cargo.ts has the why).
import { cargoHint, cargoServeEnv, cargoServeMounts, prepareCargo } from '../cargo.js';
import { CARGO_HOME_AT } from '../../jail/layout.js';
import { registryReason } from '../registry-reason.js';
import { CARGO_HOME_REL } from '../step.js';
import { baseName, type EcosystemRecord } from './record.js';

/** Any Cargo.toml/Cargo.lock anywhere: a workspace's members and path dependencies sit in other dirs, and all share CARGO_HOME. */
const INPUTS = new Set(['Cargo.toml', 'Cargo.lock']);

export const cargo: EcosystemRecord = {
  name: 'cargo',
  command: 'cargo fetch',
  // The sparse index, and the crate downloads its config.json names (`dl`).
  defaultHosts: ['index.crates.io:443', 'static.crates.io:443'],
  lockfiles: ['Cargo.toml', 'Cargo.lock'],
  prepare: prepareCargo,
  // cargo's own sentences first (a stale lock, a checksum), then the proxy's status (registry-reason.ts).
  hint: (output) => cargoHint(output) ?? registryReason(output),
  // One CARGO_HOME for every workspace of the root: one unit for reuse, as Go's module cache is.
  outputRel: () => CARGO_HOME_REL,
  serveMounts: (_tree, depsDir) => cargoServeMounts(depsDir),
  serveEnv: (binds) => cargoServeEnv(binds.some((b) => b.at === CARGO_HOME_AT)),
  readsInput: (path) => INPUTS.has(baseName(path)),
};
