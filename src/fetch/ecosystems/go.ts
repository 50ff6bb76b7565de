// Go: `go mod download all` per module into one module cache per root (../go.ts has the why).
import { goHint, goServeMounts, prepareGo } from '../go.js';
import { GO_MODCACHE_REL } from '../step.js';
import { baseName, type EcosystemRecord } from './record.js';

/** Any module's go.mod/go.sum anywhere: a `replace` may point at a neighbour module, and all modules share the cache. */
const INPUTS = new Set(['go.mod', 'go.sum', 'go.work', 'go.work.sum']);

export const go: EcosystemRecord = {
  name: 'go',
  command: 'go mod download',
  prepare: prepareGo,
  hint: goHint,
  outputRel: () => GO_MODCACHE_REL,
  serveMounts: (_tree, depsDir) => goServeMounts(depsDir),
  readsInput: (path) => INPUTS.has(baseName(path)) || path.split('/').includes('vendor'),
};
