// What the query side needs of the FETCH phase (src/fetch/fetch-manager.ts fits it),
// and the three decisions made with it:
// - before a session is used: does this query wait for a fetch still queued or
//   running (only when it is fetching what this row's server reads), and for how
//   long (LSPD_FETCH_WAIT_MS, short); past that it answers from the tree alone, and
//   the answer says the dependencies are still running and that it may change. A
//   session started so is replaced when the fetch ends (create-lsp.ts).
// - the binds and env a new session gets (the checked mounts of a finished fetch).
// - what every answer says of its dependencies (`dependencies: {state, error?}`):
//   a failed or refused fetch still serves the tree, and says so.
import { deadline, type Abortable } from '../../util/deadline.js';
import type { Ecosystem, FetchView, StepStatus } from '../../fetch/types.js';
import type { Bind } from '../../jail/types.js';
import type { RootKey } from '../../store/types.js';

import type { ServerRow } from '../servers/server-row.js';
import { TREE_AT } from '../../jail/layout.js';

export interface DependencySource {
  state(key: RootKey): FetchView;
  /** `state`, not copied: read in the turn it is asked for, never kept or changed (every query reads it twice). */
  peek(key: RootKey): Readonly<FetchView>;
  /** Resolves when the root's fetch settled (or `until` says the view is what the caller waits for) or `signal` aborted, with the view then. */
  wait(key: RootKey, signal?: Abortable, opts?: { until?: (view: FetchView) => boolean }): Promise<FetchView>;
  serveBinds(key: RootKey, treeAt: string): Bind[];
  serveEnv(key: RootKey, ecosystem: Ecosystem): Record<string, string>;
  /** Deps dirs of earlier roots that serveBinds names while this root's own copy is made (fetch/borrow.ts). */
  lentDeps?(key: RootKey): string[];
  onDone(listener: (key: RootKey, view: FetchView) => void): () => void;
  /** A fetch is running for the root (eviction must not take it). */
  busy?(key: RootKey): boolean;
}

/** What an answer says about the dependencies its server could see. */
export type DependencyNote = {
  state: 'none' | 'running' | 'done' | 'partial' | 'failed' | 'refused';
  error?: string;
  /** The answer was made without dependencies that are on their way: asked again once they are there, it may differ. */
  may_change?: true;
} & Record<string, unknown>;

const unsettled = (s: StepStatus['state']) => s === 'queued' || s === 'running';
/** Skipped dependencies named in one answer (GET on the root names them all). */
const MAX_SKIPPED_NOTED = 20;

/**
 * Is the root fetching (or about to fetch) what `row` reads? Until the whole job
 * settles, even when this ecosystem's own steps are done: the mounts are published
 * when the job ends (serveBinds), so a session started earlier would run without
 * them, answer as if they were there, and be restarted when the job ends.
 */
export function fetchingFor(view: Readonly<FetchView>, row: ServerRow): boolean {
  if (view.state !== 'queued' && view.state !== 'running') return false;
  if (!row.ecosystem) return false;
  const mine = (view.ecosystems ?? []).filter((s) => s.ecosystem === row.ecosystem);
  // Workspaces linked from an earlier commit are served while the rest still run (FetchManager.serveBinds).
  return mine.length > 0 && !mine.every((s) => s.state === 'done' && s.reused !== undefined);
}

/** Some workspace of the root's fetch is still queued or running (one linked from an earlier root is not). */
export function onItsWay(view: FetchView): boolean {
  return (view.state === 'queued' || view.state === 'running') && (view.ecosystems ?? []).some((s) => unsettled(s.state));
}

/**
 * Wait for the root's fetch when it is fetching what `row` reads: at most `maxWaitMs`
 * and half of what is left of the query's budget. A fetch that ends within it gives
 * the answer its dependencies; one that does not is left to run, and the query is
 * answered from the tree alone (its note says `running`). Never refuses: a monorepo's
 * in-tree answers must not wait a minute for packages they do not read.
 */
export async function awaitDependencies(
  src: DependencySource,
  key: RootKey,
  row: ServerRow,
  deadlineAt: number,
  signal: Abortable,
  maxWaitMs: number,
): Promise<void> {
  if (!fetchingFor(src.peek(key), row)) return;
  const waitMs = Math.max(0, Math.min(maxWaitMs, Math.floor((deadlineAt - Date.now()) / 2)));
  if (waitMs === 0) return;
  const dl = deadline(signal, waitMs);
  try {
    await src.wait(key, dl.signal, { until: (v) => !fetchingFor(v, row) });
  } finally {
    dl.clear();
  }
  if (signal.aborted) throw signal.reason as Error;
}

/** The read-only dependency binds, env and settings for a new session of `row` on this root. */
export function dependencyMounts(
  src: DependencySource,
  key: RootKey,
  row: ServerRow,
): { depBinds: Bind[]; depEnv: Record<string, string>; depSettings?: Readonly<Record<string, unknown>> } {
  const depBinds = src.serveBinds(key, TREE_AT);
  const depSettings = row.dependencySettings?.(depBinds);
  return { depBinds, depEnv: row.ecosystem ? src.serveEnv(key, row.ecosystem) : {}, ...(depSettings ? { depSettings } : {}) };
}

/** `dependencies` for an answer by `row` on this root. */
export function dependencyNote(src: DependencySource, key: RootKey, row: ServerRow): DependencyNote {
  const view = src.peek(key);
  const steps = (view.ecosystems ?? []).filter((s) => s.ecosystem === row.ecosystem);
  if (steps.length === 0) {
    // Nothing of this ecosystem was planned; a whole-root failure still says why.
    return view.state === 'failed' && !view.ecosystems?.length ? { state: 'failed', ...(view.error ? { error: view.error } : {}) } : { state: 'none' };
  }
  // Still on their way (a job is published whole, so any unsettled step means none are mounted yet).
  if (fetchingFor(view, row)) return { state: 'running', may_change: true };
  const bad = steps.filter((s) => s.state === 'failed' || s.state === 'skipped' || unsettled(s.state));
  if (bad.length > 0) {
    // Workspaces fail on their own: with one of this ecosystem's fetched, its packages are served and the note says which are not.
    const state = steps.some((s) => s.state === 'done') ? 'partial' : 'failed';
    const error = bad
      .slice(0, 4)
      .map((s) =>
        steps.length > 1
          ? `${s.dir || '.'}: ${s.reason ?? 'the dependency fetch did not finish'}`
          : (s.reason ?? view.error ?? 'the dependency fetch did not finish'),
      )
      .join(' ');
    return { state, error };
  }
  const refused = steps.find((s) => s.state === 'refused');
  if (refused) return { state: 'refused', ...(refused.reason ? { error: refused.reason } : {}) };
  // Done, but some locked dependencies could not be had (no wheel, no dist): say which.
  const skipped = steps.flatMap((s) => s.skipped ?? []);
  return skipped.length > 0 ? { state: 'done', skipped: skipped.slice(0, MAX_SKIPPED_NOTED) } : { state: 'done' };
}

/**
 * Ecosystems a finished fetch brought (or failed to bring) dependencies for: their sessions restart.
 * Not those of workspaces linked from an earlier root: that was told (and its sessions restarted) when
 * they were linked, and sessions started since already have them.
 */
export function fetchedEcosystems(view: FetchView): Set<Ecosystem> {
  return new Set((view.ecosystems ?? []).filter((s) => (s.state === 'done' || s.state === 'failed') && s.reused === undefined).map((s) => s.ecosystem));
}
