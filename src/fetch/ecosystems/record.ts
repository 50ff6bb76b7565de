// What one fetch ecosystem is, as one record (the way a server row is one record,
// src/lsp/servers/server-row.ts): how its workspace is fetched in the FETCH jail,
// where the output lives in the root's deps dir, what SERVE mounts of it, and which
// tree files a workspace's fetch reads (for reuse across commits). The records are
// collected in ./table.ts; the job runner, the reuse and the manager read only
// them. Detection (which dirs are workspaces, the size bound on lockfiles) is still
// ../ecosystems.ts.
import type { ServeMount, StepContext, StepSpawn } from '../step.js';
import type { Ecosystem } from '../types.js';

export interface EcosystemRecord {
  name: Ecosystem;
  /**
   * host:port pairs its fetch reaches with the default registry settings: the
   * default egress allowlist (config fetchRegistries) is exactly the union of these,
   * so no host stays allowed for an ecosystem that does not fetch (registries.test.ts).
   */
  defaultHosts: readonly string[];
  /** What the caller is told ran, when it failed without a hint. */
  command: string;
  /**
   * The workspace's lockfiles and manifests (names in its dir, or a pattern) that
   * drive its fetch: one larger than the bound (MAX_LOCKFILE_BYTES) refuses that
   * workspace's fetch, unparsed, naming the file (../ecosystems.ts bounded).
   */
  lockfiles: readonly (string | RegExp)[];
  /** Host-side preparation of workspace `ws` into a FETCH-jail spawn. */
  prepare(ctx: StepContext, ws: string): Promise<StepSpawn>;
  /** One sentence for the caller from the step's output (registry-reason.ts for registry failures). */
  hint(output: string): string | undefined;
  /** After a step that exited 0: locked dependencies it left out, each named with why. */
  skipped?(ctx: StepContext, ws: string): Promise<string[]>;
  /**
   * <deps>-relative dir the step for `ws` writes and nothing else writes. Two steps
   * whose dirs are equal or nest (all Go modules share one module cache) are one unit
   * for reuse: linked together from one earlier root, or fetched together.
   */
  outputRel(ws: string): string;
  /** Environment for a SERVE jail of this ecosystem's server on a root, given the root's dependency binds (in-jail `at`). */
  serveEnv?(binds: readonly { at: string }[]): Record<string, string>;
  /** SERVE mounts of a done workspace (checked: plain dirs, no links). */
  serveMounts(treeDir: string, depsDir: string, ws: string, notes?: (line: string) => void): Promise<ServeMount[]>;
  /**
   * Whether tree path `path` (a file, from tree.idx) is read by the fetch of
   * workspace `ws`: equal blob ids of every such file, equal fetch (fetch-reuse.ts).
   * Err on reading more: a false "equal" serves another commit's dependencies.
   */
  readsInput(path: string, ws: string): boolean;
}

/** `path` is inside tree dir `ws` ('' is the whole tree). */
export function inside(path: string, ws: string): boolean {
  return ws === '' || path.startsWith(`${ws}/`);
}

export const baseName = (path: string): string => path.slice(path.lastIndexOf('/') + 1);
