// Warm-up on upload: CI pushes a commit and a bot asks about it seconds later, so
// the cold start (spawn, initialize, the server's first indexing) is paid in the
// background before the first query rather than by it.
//
// When a root is stored (PUT without ?warm=false), at once (after at most
// LSPD_FETCH_WAIT_MS for a fetch that may be about to end: a monorepo's minute of
// downloads must not keep its in-tree answers cold; a session started without its
// dependencies is replaced when they land, and warmed again then, create-lsp.ts),
// each server chosen for the root's languages gets its largest workspaces (most
// source files; LSPD_WARM_WORKSPACES of them) started through SessionPool.warm,
// a representative file opened and the server driven to readiness (the row's own
// readiness strategy, then a documentSymbol request and a hover on the first
// symbol it names), exactly as a query would. More of the workspace's files are
// opened with it (LSPD_WARM_OPEN_FILES in all): those the commit changed against
// the root it follows first, since those are what a review bot asks about, so the
// first query on one skips the server's work on opening it.
//
// Budget: at most LSPD_WARM_MAX_SESSIONS warm-ups run at once, shared between
// orgs by src/tenancy/fair-share.ts and handed out round-robin (OrgQueue), so one org's
// hundred pushes do not starve another's one; a root's whole warm-up is bounded by
// LSPD_WARM_TIMEOUT_MS. A warm session is an idle session (no lease): queries
// never wait for a warm-up, the pool never evicts for one nor lets it take its
// reserve of free places, and a query that needs the place evicts it.
import { dirname, posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../config.js';
import { asAbortSignal, deadline, type Abortable } from '../../util/deadline.js';
import { nextTurn, turnCounter } from '../../util/event-loop.js';
import { FairShare, OrgQueue, shareLimits } from '../../tenancy/fair-share.js';
import type { Health } from '../../health.js';
import { languageOf, type Language } from '../../languages.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { RootRef } from '../../store/root-cache.js';
import { readTreeIndex, type FileEntry, type TreeEntry } from '../../store/tree-index.js';
import { rootId, type RootInfo, type RootKey } from '../../store/types.js';
import type { ServerRow } from '../servers/server-row.js';
import type { ServerTable } from '../servers/server-table.js';
import { SKIP_DIRS, type TargetFile } from '../target-file.js';
import { packageVisible } from '../servers/needs-package.js';
import { dependencyMounts, onItsWay, type DependencySource } from './dependencies.js';
import type { SessionPool } from './pool.js';
import type { Session } from './session.js';
import { cpuSpent } from '../../jail/proc-cpu.js';
import { isRange, type Position } from '../wire/lsp-types.js';

export interface WarmUpDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  pool: SessionPool;
  table: ServerTable;
  store: {
    get(key: RootKey): Pick<RootInfo, 'generation' | 'languages'> | undefined;
    treeDir(key: RootKey): string;
    predecessorOf(key: RootKey): RootKey | undefined;
  };
  dependencies: DependencySource;
  /** The workspace a query on `rel` would use (QueryService's finder: the same session key). */
  workspaceOf(root: RootRef, treeDir: string, rel: string, markers: readonly string[]): Promise<string>;
  /** A checked target file, as a query reads it (and its lines, as an answer's previews read them). */
  readTarget(root: RootRef, treeDir: string, rel: string): Promise<TargetFile>;
}

interface Task {
  key: RootKey;
  root: RootRef;
  treeDir: string;
  row: ServerRow;
  rel: string;
  /** More files of the workspace to open once `rel` is ready. */
  more: string[];
  workspace: string;
  deadlineAt: number;
}

export class WarmUp {
  private readonly deps: WarmUpDeps;
  private readonly log: Logger;
  private readonly queue = new OrgQueue<Task>();
  private readonly running: FairShare | undefined;
  /** Aborted by close(): warm-ups in flight stop waiting. */
  private readonly closed = new AbortController();

  constructor(deps: WarmUpDeps) {
    this.deps = deps;
    this.log = deps.log.child({ mod: 'warm' });
    const c = deps.config;
    this.running =
      c.warmMaxSessions > 0 ? new FairShare(shareLimits(c.warmMaxSessions, { orgCap: 0, reservePercent: c.orgReservePercent, floor: 1 })) : undefined;
  }

  /** Warm the root's sessions (of `servers` only, when given) in the background; never throws, never delays the caller. */
  warm(key: RootKey, servers?: ReadonlySet<string>): void {
    if (!this.running || this.closed.signal.aborted) return;
    this.plan(key, servers).catch((err: unknown) => this.log.warn({ root: rootId(key), err: (err as Error).message }, 'warm-up not planned'));
  }

  close(): void {
    this.closed.abort();
  }

  private async plan(key: RootKey, servers: ReadonlySet<string> | undefined): Promise<void> {
    const { config, store, dependencies } = this.deps;
    const deadlineAt = Date.now() + config.warmTimeoutMs;
    // Not after the fetch: a session started before it ends is replaced when it does.
    if (dependencies && config.fetchWaitMs > 0) {
      const view = dependencies.state(key);
      // Not for a job whose every workspace is served already (linked from an earlier commit, borrow.ts).
      if (onItsWay(view) || view.state === 'none') {
        const dl = deadline(this.closed.signal, Math.min(config.fetchWaitMs, config.warmTimeoutMs));
        try {
          await dependencies.wait(key, dl.signal, { until: (v) => !onItsWay(v) });
        } finally {
          dl.clear();
        }
      }
    }
    const info = store.get(key);
    if (!info || Date.now() >= deadlineAt || this.closed.signal.aborted) return;
    const root: RootRef = { id: rootId(key), generation: info.generation };
    const treeDir = store.treeDir(key);
    const entries = (await readTreeIndex(dirname(treeDir))) ?? [];
    const isChanged = await this.changedSince(key);
    const seen = new Set<string>();
    for (const row of this.rowsFor(info.languages)) {
      if (servers && !servers.has(row.name)) continue;
      const targets = await warmTargets(
        entries,
        (p) => {
          const l = languageOf(p);
          // rowsFor chose this row for every language of the root it takes over (the vue row's .ts files).
          return l !== undefined && (row.languages.includes(l.language) || (row.takesOver?.includes(l.language) ?? false));
        },
        row.rootMarkers,
        config.maxTargetFileBytes,
        config.warmWorkspaces,
        { open: config.warmOpenFiles, isChanged },
      );
      for (const { rel, more } of targets) {
        const workspace = await this.deps.workspaceOf(root, treeDir, rel, row.rootMarkers);
        const id = `${row.name}\u0000${workspace}`;
        if (seen.has(id)) continue;
        seen.add(id);
        this.queue.push(key.org, { key, root, treeDir, row, rel, more, workspace, deadlineAt });
      }
    }
    this.pump();
  }

  /** Which files differ (by git blob id) from the root this one follows; none when it follows none. */
  private async changedSince(key: RootKey): Promise<(e: FileEntry) => boolean> {
    const prev = this.deps.store.predecessorOf(key);
    const before = prev && (await readTreeIndex(dirname(this.deps.store.treeDir(prev))));
    if (!before) return () => false;
    const ids = new Map<string, string>();
    const due = turnCounter();
    for (const e of before) {
      if (e.kind === 'file' || e.kind === 'exec') ids.set(e.path, e.id);
      if (due()) await nextTurn();
    }
    // An id not known on either side (a root stored before lspd kept ids) says nothing.
    return (e) => {
      const was = ids.get(e.path);
      return e.id !== '' && was !== '' && was !== e.id;
    };
  }

  /** The servers a query on this root's languages would get, available ones only, once each. */
  private rowsFor(languages: readonly Language[]): ServerRow[] {
    const rows: ServerRow[] = [];
    const installed = (r: ServerRow) => this.deps.health.servers[r.name]?.available !== false;
    for (const lang of languages) {
      const row = this.deps.table.choose(lang, languages, installed);
      if (row && installed(row) && !rows.includes(row)) rows.push(row);
    }
    return rows;
  }

  /** Start queued warm-ups while the budget (and each org's share of it) allows. */
  private pump(): void {
    const running = this.running!;
    while (this.queue.size > 0 && !this.closed.signal.aborted) {
      const next = this.queue.next((org) => running.check(org) === undefined);
      if (!next) return;
      running.take(next.org);
      void this.run(next.item).finally(() => {
        running.give(next.org);
        this.pump();
      });
    }
  }

  private async run(t: Task): Promise<void> {
    const { metrics, pool, store, config } = this.deps;
    const count = (result: string) => metrics.warmups.inc({ server: t.row.name, result });
    const left = t.deadlineAt - Date.now();
    // A root deleted (or deleted and uploaded again) since it was planned is not warmed.
    if (left <= 0) return count('expired');
    if (store.get(t.key)?.generation !== t.root.generation) return count('skipped');
    const mounts = dependencyMounts(this.deps.dependencies, t.key, t.row);
    // A query there would be refused (the Angular row without @angular/core): nothing to warm.
    const need = t.row.needsPackage;
    if (need && !(await packageVisible(need.name, { treeHostDir: t.treeDir, workspace: t.workspace, depBinds: mounts.depBinds }))) return count('skipped');
    const session = pool.warm({
      row: t.row,
      rootId: t.root.id,
      generation: t.root.generation,
      workspace: t.workspace,
      treeHostDir: t.treeDir,
      ...mounts,
    });
    if (!session) return count('skipped');
    const dl = deadline(this.closed.signal, left);
    const t0 = Date.now();
    try {
      // Each file read, and its workspace found, as a query would: the daemon's caches are warm too.
      const read = async (rel: string) => {
        await this.deps.workspaceOf(t.root, t.treeDir, rel, t.row.rootMarkers);
        return this.deps.readTarget(t.root, t.treeDir, rel);
      };
      const complete = await drive(
        session,
        t,
        { readyMs: Math.min(config.readyTimeoutMs, left), diagnosticsWindowMs: config.diagnosticsWindowMs, settleMs: config.warmSettleMs },
        dl.signal,
        read,
      );
      count(complete ? 'ready' : 'incomplete');
      this.log.info({ root: t.root.id, server: t.row.name, workspace: t.workspace, ms: Date.now() - t0, complete }, 'session warmed');
    } catch (err) {
      count('failed');
      this.log.info({ root: t.root.id, server: t.row.name, workspace: t.workspace, err: (err as Error).message }, 'warm-up did not finish');
    } finally {
      dl.clear();
      session.warm = 'warmed';
    }
  }
}

/** A workspace/symbol query that matches nothing in practice. */
const WARM_QUERY = 'lspdWarmUpProbeZq';

/**
 * What a first query does, with no query: wait for initialize, open the file, wait
 * for the row's readiness signal; then open the task's other files and nudge each
 * (symbols, a hover: a server that loads lazily does its work on the first request).
 * True when readiness was reached.
 */
async function drive(
  session: Session,
  t: Task,
  { readyMs, diagnosticsWindowMs, settleMs }: { readyMs: number; diagnosticsWindowMs: number; settleMs: number },
  signal: Abortable,
  read: (rel: string) => Promise<TargetFile>,
): Promise<boolean> {
  const target = await read(t.rel);
  await session.whenReady(signal);
  const release = await session.slot(signal);
  try {
    const lang = languageOf(t.rel)!;
    const uri = session.open(target.path, lang.languageId, target.text);
    const complete = await session.waitReady(uri, readyMs, signal);
    if (signal.aborted) throw signal.reason as Error;
    // One a query would refuse (binary, too large, not UTF-8) is not opened.
    const opened: string[] = [];
    for (const rel of t.more) {
      const more = await read(rel).catch(() => undefined);
      if (more && !signal.aborted) opened.push(session.open(more.path, languageOf(rel)!.languageId, more.text));
    }
    // The requests below queue behind those opens, so the server has taken them in when this returns.
    for (const u of [uri, ...opened]) await nudge(session, u, signal);
    // A server that indexes lazily (pyright) parses and binds the workspace for
    // this; a name nothing is called keeps the answer (and its frame) small.
    if (session.supports('workspaceSymbolProvider')) await session.request('workspace/symbol', { query: WARM_QUERY }, signal);
    // Those requests can start work of their own (TS 7 loads the project on the
    // first one, in a progress of its own): wait it out here, grace included, so
    // the first query does not (it paid the 150 ms grace: 141 ms vs 7 ms warm).
    // Each opened file too: a row whose readiness is a document's diagnostics (clangd,
    // typescript-language-server) has then built it, as a first query on it would wait for.
    let ready = complete;
    for (const u of [uri, ...opened]) ready = (await session.waitReady(u, readyMs, signal)) && ready;
    // And until each opened file's diagnostics are pushed (one window for them all), so
    // the checks a server runs on a file it was given (bash-language-server starts a
    // shellcheck process for each) are done rather than sharing the jail's CPU with the
    // first query. A server that pushes none for a file costs the window, in the background.
    const until = Date.now() + diagnosticsWindowMs;
    for (const u of [uri, ...opened]) if (!(await session.diagnosed(u, Math.max(0, until - Date.now()), signal))) break;
    // And until it goes quiet: gopls analyses a package and its dependencies on its own
    // after answering (300-480 ms of CPU on go-basic; a first query after warm-up
    // during that took 47 ms against 15 warm). Its slot is held meanwhile, one of many.
    await quiet(session, settleMs, signal);
    return ready;
  } finally {
    release();
  }
}

/** A jail is quiet when it spends less than this share of one CPU over one window. */
const QUIET_WINDOW_MS = 100;
const QUIET_CPU_MS = 10;

/** Wait (at most boundMs) for a window in which the session's jail is quiet. */
async function quiet(session: Session, boundMs: number, signal: Abortable): Promise<void> {
  const until = Date.now() + boundMs;
  // One real signal for the whole wait, not one (and a listener left on `signal`) per window.
  const real = asAbortSignal(signal);
  while (Date.now() + QUIET_WINDOW_MS <= until && !signal.aborted) {
    const before = session.cpuTimes();
    if (before?.size === 0) return; // not running: nothing to wait for
    await sleep(QUIET_WINDOW_MS, undefined, { signal: real });
    const after = session.cpuTimes();
    // Too many processes to read (undefined) is not quiet.
    if (before && after && cpuSpent(before, after) < QUIET_CPU_MS) return;
  }
}

/**
 * documentSymbol is syntax only: a hover on the file's first symbol makes the server
 * build what every semantic query on that file needs (TS: the type checker, which
 * binds every file of the program: 19.7 ms of the first definition after warm-up vs
 * 7.1 ms warm; gopls: the file's package, type-checked with its imports). Answers are
 * not used, and a server that cannot answer them is still warm.
 */
async function nudge(session: Session, uri: string, signal: Abortable): Promise<void> {
  if (!session.supports('documentSymbolProvider')) return;
  // A file the server cannot outline leaves it no less warm; a dead session fails the next request.
  const symbols = await session.request('textDocument/documentSymbol', { textDocument: { uri } }, signal).catch(() => undefined);
  const at = firstSymbolAt(symbols);
  if (!at) return;
  for (const [method, provider] of NUDGES) {
    if (session.supports(provider)) await session.request(method, { textDocument: { uri }, position: at }, signal).catch(() => undefined);
  }
}

/**
 * The requests a nudge makes at a file's first symbol. The definition too, the query
 * agents ask first: a server run by node answers its first one through code V8 has
 * not compiled yet (intelephense: 10 ms of the first definition after warm-up vs 3.5
 * warm, all in the server).
 */
const NUDGES = [
  ['textDocument/hover', 'hoverProvider'],
  ['textDocument/definition', 'definitionProvider'],
] as const;

/** Where the first symbol of a documentSymbol answer (DocumentSymbol[] or SymbolInformation[]) is named. */
export function firstSymbolAt(raw: unknown): Position | undefined {
  const first: unknown = Array.isArray(raw) ? raw[0] : undefined;
  if (typeof first !== 'object' || first === null) return undefined;
  const f = first as { selectionRange?: unknown; location?: { range?: unknown } };
  const range = f.selectionRange ?? f.location?.range;
  return isRange(range) ? range.start : undefined;
}

export interface WarmTarget {
  /** The workspace's representative file, opened first and driven to readiness. */
  rel: string;
  /** More of its files to open: changed ones first, then the largest. */
  more: string[];
}

/**
 * One representative file per workspace of a server, for at most `limit`
 * workspaces, those with the most of its files first: a workspace is the nearest
 * directory holding one of its markers (else the tree's top), as a query finds it;
 * its file the largest one (then the shallowest, then by name) of at most
 * `maxBytes`: it likely imports the most, so opening it loads the most (an
 * `__init__.py` is often empty). Up to `open.open - 1` more files each: those
 * `open.isChanged` names (in index order), then the next largest. Dependency and
 * dot directories are not looked in. Pure, over the root's tree index; linear in
 * it (the picks are kept in arrays of at most `open.open`), and it hands the event
 * loop back as it goes (a tree may hold LSPD_MAX_TREE_FILES entries).
 */
export async function warmTargets(
  entries: readonly TreeEntry[],
  accept: (rel: string) => boolean,
  markers: readonly string[],
  maxBytes: number,
  limit: number,
  open: { open: number; isChanged: (e: FileEntry) => boolean } = { open: 1, isChanged: () => false },
): Promise<WarmTarget[]> {
  const due = turnCounter();
  const markerDirs = new Set<string>();
  for (const e of entries) {
    if (markers.includes(posix.basename(e.path))) markerDirs.add(parentOf(e.path));
    if (due()) await nextTurn();
  }
  const byWorkspace = new Map<string, { files: number; largest: FileEntry[]; changed: string[] }>();
  for (const e of entries) {
    if (due()) await nextTurn();
    if ((e.kind !== 'file' && e.kind !== 'exec') || e.size > maxBytes || !accept(e.path)) continue;
    const segs = e.path.split('/');
    if (segs.slice(0, -1).some((s) => s.startsWith('.') || SKIP_DIRS.has(s))) continue;
    let ws = parentOf(e.path);
    while (ws !== '' && !markerDirs.has(ws)) ws = parentOf(ws);
    let w = byWorkspace.get(ws);
    if (!w) byWorkspace.set(ws, (w = { files: 0, largest: [], changed: [] }));
    w.files++;
    keepLargest(w.largest, e, open.open);
    if (w.changed.length < open.open && open.isChanged(e)) w.changed.push(e.path);
  }
  return [...byWorkspace.entries()]
    .sort(([a, x], [b, y]) => y.files - x.files || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, limit)
    .map(([, w]) => {
      const rel = w.largest[0]!.path;
      const more = [...new Set([...w.changed, ...w.largest.map((e) => e.path)])].filter((p) => p !== rel).slice(0, open.open - 1);
      return { rel, more };
    });
}

/** Insert `e` into `top` (largest first, then shallowest, then by name), keeping at most `n`. */
function keepLargest(top: FileEntry[], e: FileEntry, n: number): void {
  const before = (a: FileEntry, b: FileEntry) => a.size > b.size || (a.size === b.size && shallowerFirst(a.path, b.path) < 0);
  let i = top.length;
  while (i > 0 && before(e, top[i - 1]!)) i--;
  if (i >= n) return;
  top.splice(i, 0, e);
  if (top.length > n) top.pop();
}

function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
}

function shallowerFirst(a: string, b: string): number {
  const d = a.split('/').length - b.split('/').length;
  return d !== 0 ? d : a < b ? -1 : a > b ? 1 : 0;
}
