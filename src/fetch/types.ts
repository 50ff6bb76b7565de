// The FETCH phase's public vocabulary: ecosystems, the states a root's fetch goes
// through, and the JSON-ready view that `GET /v1/roots/...` shows. Kept apart from
// the manager so routes and sessions can import the types without the machinery.
import type { RootKey } from '../api/schemas.js';

/** The closed set of ecosystems lspd knows how to fetch (or knows it must refuse). */
export type Ecosystem = 'go' | 'npm' | 'composer' | 'cargo' | 'python';

/**
 * A root's fetch, as API.md names it. `partial`: some workspaces were fetched and
 * are served, others failed (each step says why); `failed`: nothing fetched is usable.
 */
export type FetchStateName = 'none' | 'queued' | 'running' | 'done' | 'partial' | 'failed' | 'refused';

/** One unit of work: an ecosystem in one workspace (a tree-relative dir, '' = top). */
export interface Workspace {
  ecosystem: Ecosystem;
  /** Tree-relative, '/'-separated, '' for the top of the tree; never contains '..'. */
  dir: string;
}

/** What detection decided for a workspace: fetch it, or refuse and say why. */
export type PlanItem = (Workspace & { action: 'fetch' }) | (Workspace & { action: 'refuse'; reason: string });

/** How one workspace's step ended (or where it stands). */
export interface StepStatus extends Workspace {
  state: 'queued' | 'running' | 'done' | 'failed' | 'refused' | 'skipped';
  /** Why it was refused, failed or skipped: one sentence, no host paths. */
  reason?: string;
  /**
   * Done, but some locked dependencies were left out, each named with why
   * ("only-sdist==1.0: no wheel …"): a Python requirement with no wheel, a
   * composer package with no dist archive. Bounded; never host paths.
   */
  skipped?: string[];
  /** Done by linking this workspace's fetch from an earlier root of the org and repo (its sha): same lockfiles and manifests. */
  reused?: string;
}

/** The JSON a caller sees; fields beyond `state`/`error` are additions API.md allows. */
export interface FetchView {
  state: FetchStateName;
  /** failed, partial: which workspaces failed and why; refused: why nothing was fetched. */
  error?: string;
  ecosystems?: StepStatus[];
  /** The bounded, host-path-scrubbed tail of the fetchers' output. */
  log?: string;
  startedAt?: string;
  finishedAt?: string;
  /** Disk used by the root's dependency dir after the fetch. */
  bytes?: number;
}

/** The slice of the root store the fetcher needs (src/store/ provides it). */
export interface FetchStore {
  /** Host dir of the stored, immutable tree. */
  treeDir(key: RootKey): string;
  /** The root's dependency dir, created empty with the root. */
  depsDir(key: RootKey): string;
  /** Called (and awaited) before a root's files are removed (DELETE or eviction). */
  onRemove(listener: (key: RootKey) => void | Promise<void>): unknown;
}

/**
 * Pinned toolchains, as absolute paths visible inside the jail (under /usr, which
 * the jail binds read-only). Absent means "not installed": that ecosystem is refused.
 */
export interface Toolchains {
  go?: string;
  npm?: string;
  node?: string;
  composer?: string;
  php?: string;
  /** Debian's python3 and its pip (python3-pip): wheels only, never a build. */
  python?: string;
  pip?: string;
  /** Debian 13's cargo, run from the Debian 13 root (`cargoRoot`, whose /usr the jail binds). */
  cargo?: string;
  cargoRoot?: string;
}
