// What one fetch ecosystem is, as one record (the way a server row is one record,
// src/lsp/servers/server-row.ts): how its workspace is fetched in the FETCH jail,
// where the output lives in the root's deps dir, what SERVE mounts of it, and which
// tree files a workspace's fetch reads (for reuse across commits). The records are
// collected in ./table.ts; the job runner, the reuse and the manager read only
// them. The tree walk and the size bound on lockfiles are ../ecosystems.ts; whether a
// dir is a workspace, and why one is refused, is the record's `detect`.
import { lstat, readFile } from 'node:fs/promises';
import type { ServeMount, StepContext, StepSpawn } from '../step.js';
import type { Ecosystem, Toolchains } from '../types.js';

/** A tree dir as detection sees it. */
export interface DetectDir {
  treeDir: string;
  /** Tree-relative ('' is the tree's top, where a manifest without a lock is reported). */
  dir: string;
  /** Names of the plain files in it. */
  files: ReadonlySet<string>;
  /** Names of the directories in it (never links). */
  dirs: ReadonlySet<string>;
}

/** What detection makes of a dir: a workspace to fetch, one refused with the reason the caller reads. */
export type Detected = { action: 'fetch' } | { action: 'refuse'; reason: string };

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
  /**
   * Whether `d` is a workspace of this ecosystem, and whether it may be fetched with
   * `tools` (undefined: not one). Dirs are asked in the table's order.
   */
  detect(d: DetectDir, tools: Toolchains): Promise<Detected | undefined>;
  /** Top-level <deps> dir its results live in (sealed after a job, removed when over the byte bound). */
  outputDir: string;
  /** <deps> dirs it (or the package store for it) writes only during a job (a download cache); removed when the job ends. */
  scratchDirs?: readonly string[];
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

export const fetchIt: Detected = { action: 'fetch' };
export const refuse = (reason: string): Detected => ({ action: 'refuse', reason });

/** A small JSON object file (a manifest read only to say why nothing was fetched), or undefined. */
export async function readSmallJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const st = await lstat(file);
    if (!st.isFile() || st.size > 4 * 1024 * 1024) return undefined;
    const v: unknown = JSON.parse(await readFile(file, 'utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // unreadable or not JSON: the language server will say so; nothing to fetch
  }
}
