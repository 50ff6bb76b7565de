// Go: `go mod download all` per module into one module cache per root (../go.ts has the why).
import { goHint, goServeEnv, goServeMounts, prepareGo } from '../go.js';
import { GOPATH_AT } from '../../jail/layout.js';
import { registryReason } from '../registry-reason.js';
import { GO_MODCACHE_REL } from '../step.js';
import { baseName, fetchIt, refuse, type EcosystemRecord } from './record.js';

/** Any module's go.mod/go.sum anywhere: a `replace` may point at a neighbour module, and all modules share the cache. */
const INPUTS = new Set(['go.mod', 'go.sum', 'go.work', 'go.work.sum']);

const MISSING = 'Go dependencies were not fetched: the go toolchain is not installed.';

export const go: EcosystemRecord = {
  name: 'go',
  command: 'go mod download',
  // The module proxy, and the checksum database go asks when go.sum lacks an entry (GOSUMDB's default).
  defaultHosts: ['proxy.golang.org:443', 'sum.golang.org:443'],
  lockfiles: ['go.mod', 'go.sum'],
  detect: async ({ files }, tools) => (files.has('go.mod') ? (tools.go ? fetchIt : refuse(MISSING)) : undefined),
  outputDir: 'go',
  prepare: prepareGo,
  // go's own sentences first (go.sum, GOVCS), then the proxy's status (registry-reason.ts).
  hint: (output) => goHint(output) ?? registryReason(output),
  outputRel: () => GO_MODCACHE_REL,
  serveMounts: (_tree, depsDir) => goServeMounts(depsDir),
  serveEnv: (binds) => goServeEnv(binds.some((b) => b.at.startsWith(`${GOPATH_AT}/`))),
  readsInput: (path) => INPUTS.has(baseName(path)) || path.split('/').includes('vendor'),
};
