// The closed list of ecosystems lspd fetches, one record each (./record.ts), as
// src/lsp/servers/server-table.ts lists the server rows. Adding one: a record file
// here (its detection, output dir, hosts and reasons), a line below (the order is
// the order a dir's workspaces are planned in), its name in ../types.ts Ecosystem,
// its pinned tool in ../types.ts Toolchains and ../toolchains.ts, and its
// defaultHosts in config's fetchRegistries default (../registries.test.ts holds the
// two equal).
import type { Ecosystem } from '../types.js';
import { cargo } from './cargo.js';
import { composer } from './composer.js';
import { go } from './go.js';
import { npm } from './npm.js';
import { python } from './python.js';
import type { EcosystemRecord } from './record.js';

export const ecosystemTable: readonly EcosystemRecord[] = [go, npm, composer, cargo, python];

const byName = new Map<Ecosystem, EcosystemRecord>(ecosystemTable.map((r) => [r.name, r]));

/** The record of a fetched ecosystem; undefined for one lspd only refuses. */
export function recordOf(name: Ecosystem): EcosystemRecord | undefined {
  return byName.get(name);
}
