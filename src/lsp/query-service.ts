// The object routes call: `lsp(q, signal)` answers one /v1/code/lsp query.
// Order of work, each step before anything costlier:
//   admission (src/tenancy/admission.ts: jail proved? 503 not_ready → org past its share of
//   the wait queue? 503 busy → root stored? 409 need_tree) → target file:
//   inside the root, exists, ≤ 2 MiB, UTF-8 (404/413/415) → a server for it (422
//   no_server) → result cache → queue bound, per org (503 busy) → lease a session (spawned
//   lazily; 503 server_unavailable with retry_after when it cannot start) → didOpen
//   once → readiness (bounded; past it the answer says incomplete) → the request
//   under the deadline → projection → size cap.
// The deadline is queryTimeoutMs minus cleanupReserveMs, counted from arrival; the
// reserve is for $/cancelRequest and cleanup. A client that disconnects aborts the
// query the same way (`signal`).
import type { Config } from '../config.js';
import { deadline, hangUpDeadline, type Abortable } from '../util/deadline.js';
import { AppError, errors, isAppError } from '../errors.js';
import { ops, type Admission } from '../tenancy/admission.js';
import type { Health } from '../health.js';
import { languageOf, type Language } from '../languages.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { LspQuery, RootKey } from '../api/schemas.js';
import type { LspAnswer } from '../api/responses.js';
import { RootCache, rootScope, type RootRef } from '../store/root-cache.js';
import { rootId, type RootInfo } from '../store/types.js';
import { ResultCache } from './cache.js';
import { keptOf, parseKept, sentBody, sentOf } from './answer-body.js';
import { awaitDependencies, dependencyMounts, dependencyNote, type DependencyNote, type DependencySource } from './session/dependencies.js';
import type { ExternalCoordinate, FileCoordinate } from './answer/coordinates.js';
import { readRefOf } from './answer/file-read.js';
import { editOpsOf, hierarchyOpsOf, runOp, workspaceSymbols, type OpContext, type OpResult, type SymbolsResult } from './lsp-ops.js';
import { treeJailPath } from './answer/paths.js';
import { TREE_AT } from '../jail/layout.js';
import type { Lease, SessionPool } from './session/pool.js';
import { capAnswerJson, projectDiagnostics, type DiagnosticsAnswer, type ReadLines } from './answer/projection.js';
import { createScrubber, type Scrubber } from './answer/scrub.js';
import { knownHostPaths, ownTextScrubber, scrubbedError } from './answer/own-text.js';
import type { ServerRow } from './servers/server-row.js';
import type { ServerTable } from './servers/server-table.js';
import { SessionFailedError, type Session } from './session/session.js';
import { packageVisible } from './servers/needs-package.js';
import { findFileOf, TargetCache, WorkspaceFinder, type TargetFile } from './target-file.js';
import { TreeLines } from './answer/tree-lines.js';
import { WarmUp } from './session/warm-up.js';
import { ResponseError } from './wire/transport.js';

/** What the query service needs of the store (RootStore satisfies it). */
export interface RootAccess {
  get(key: RootKey): RootInfo | undefined;
  treeDir(key: RootKey): string;
  depsDir(key: RootKey): string;
  /** The root this one follows (its base, else the repo's previous upload): warm-up opens what changed since. */
  predecessorOf(key: RootKey): RootKey | undefined;
}

export interface QueryServiceDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  health: Health;
  store: RootAccess;
  pool: SessionPool;
  table: ServerTable;
  /** The FETCH phase: sessions wait for it, bind what it fetched, answers say how it went. */
  dependencies: DependencySource;
  /** The one way in (not_ready, busy, need_tree) and the wait queue's places. */
  admission: Admission;
}

/** Every answer says this: a dependency location is what the server saw, not an attested fact. */
const DEPENDENCY_FRESHNESS = 'server_observed_not_attested';

/** What POST /v1/code/lsp sends: the server that answered and the answer's bytes. */
export interface SentAnswer {
  server: string;
  body: Buffer;
}

/** A query admitted: when it arrived, its deadline, the root as admitted. */
interface Arrival {
  q: LspQuery;
  route: string;
  t0: number;
  deadlineAt: number;
  info: RootInfo;
  /** Where the admitted upload is, made on its first query (`placeOf`). */
  at: Place;
}

/** An upload as queries find it: its cache identity and its dirs, built once per upload. */
interface Place {
  root: RootRef;
  treeDir: string;
  depsDir: string;
}

interface Work {
  q: LspQuery;
  /** The route a refusal is counted under: /v1/code/lsp, or the route whose service asked (/ask, /v1/diff, /v1/check). */
  route: string;
  /** The root and which upload of it: every cache and session is keyed by both. */
  root: RootRef;
  /** The languages the root holds, as stored (workspaceSymbols asks each one's server). */
  languages: readonly Language[];
  treeDir: string;
  depsDir: string;
  t0: number;
  deadline: Abortable;
  deadlineAt: number;
  /** Did the client hang up (its signal, or hangUpDeadline's flag)? */
  client: { readonly aborted: boolean };
  /** Each stage of the query and the ms from t0 at which it ended, in pairs (logged for a slow one: where its time went). */
  stages: (string | number)[];
}

/** A query slower than this logs its stages (`slow query`): what a first answer on a fresh commit waited for. */
const SLOW_QUERY_MS = 1000;

function mark(w: Work, stage: string): void {
  // Pairs in an array, not keys added to an object: a keyed store per stage, every query, for a log line few queries write.
  w.stages.push(stage, elapsed(w.t0));
}

/** The stages as the slow-query line shows them. */
function stagesOf(w: Work): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < w.stages.length; i += 2) out[w.stages[i] as string] = w.stages[i + 1] as number;
  return out;
}

/** What one root's scrubber is charged (see `scrubbers`). */
const SCRUBBER_BYTES = 16 * 1024;

export class QueryService {
  private readonly deps: QueryServiceDeps;
  private readonly cache: ResultCache<LspAnswer>;
  private readonly workspaces = new WorkspaceFinder();
  private readonly lines: TreeLines;
  private readonly targets: TargetCache;
  /**
   * One scrubber per root (building one compiles its known-path matchers): a few
   * host paths the daemon chose (data dir, project, HOME, the tree's dir), never
   * tree input, so a flat charge is a sound estimate of its closures and regexes.
   */
  private readonly scrubbers = new RootCache<Scrubber>({ max: 256, maxBytes: 256 * SCRUBBER_BYTES, sizeOf: () => SCRUBBER_BYTES });
  /** lspd's own text that is about no one root (readiness reasons): scrubbed as server text is. */
  private readonly ownText: Scrubber;
  /** Sessions started on upload (session/warm-up.ts), through the same finder and target checks as queries. */
  private readonly warmUp: WarmUp;
  /** The answer bounds every op gets (the config is fixed for the daemon's life): one object, not one a query. */
  private readonly limits: OpContext['limits'];
  /** An admitted root's id and dirs, by its RootInfo (one object per upload, dropped with it): joined once, not per query. */
  private readonly placeOf = new WeakMap<RootInfo, Place>();
  /** A row whose server is not known to be absent (/readyz's probe). */
  private readonly installed = (row: ServerRow): boolean => this.deps.health.servers[row.name]?.available !== false;

  constructor(deps: QueryServiceDeps) {
    this.deps = deps;
    const c = deps.config;
    this.limits = Object.freeze({
      maxLocations: c.maxLocations,
      maxHoverBytes: c.maxHoverBytes,
      diagnosticsWindowMs: c.diagnosticsWindowMs,
      maxCallNodes: c.maxCallNodes,
      maxAnswerBytes: c.maxAnswerBytes,
    });
    this.ownText = ownTextScrubber(c.dataDir);
    this.cache = new ResultCache<LspAnswer>({ entries: c.resultCacheEntries, bytes: c.resultCacheBytes }, deps.metrics);
    this.lines = new TreeLines(c.fileCacheBytes / 2);
    // A target's lines also serve the previews of answers landing in it, with no second read.
    this.targets = new TargetCache(c.fileCacheBytes / 2, (root, treeDir, t) => this.lines.remember(root, treeDir, t));
    deps.metrics.watchCache('result', () => this.cache.bytes);
    deps.metrics.watchCache('tree_lines', () => this.lines.bytes);
    deps.metrics.watchCache('targets', () => this.targets.bytes);
    deps.metrics.watchCache('workspaces', () => this.workspaces.bytes);
    deps.metrics.watchCache('scrubbers', () => this.scrubbers.bytes);
    this.warmUp = new WarmUp({
      ...deps,
      workspaceOf: (root, treeDir, rel, markers) => this.workspaces.find(root, treeDir, rel, markers),
      readTarget: (root, treeDir, rel) => this.readTarget(root, treeDir, rel),
    });
  }

  /** A root was stored: start its likely sessions in the background (PUT without ?warm=false); `servers`: of these servers only. */
  warm(key: RootKey, servers?: ReadonlySet<string>): void {
    if (this.deps.health.jailReady) this.warmUp.warm(key, servers);
  }

  /** Stop starting warm-ups (shutdown). */
  close(): void {
    this.warmUp.close();
  }

  /** The root's dependencies changed (its fetch finished): answers and dependency indexes read without them are forgotten. */
  dropAnswers(rootId: string): void {
    this.cache.dropRoot(rootId);
    this.lines.dropIndexes(rootId);
  }

  /** A root went away (DELETE or eviction): forget everything cached about it (the pool stops its sessions). */
  dropRoot(rootId: string): void {
    this.cache.dropRoot(rootId);
    this.targets.dropRoot(rootId);
    this.workspaces.dropRoot(rootId);
    this.lines.dropRoot(rootId);
    this.scrubbers.dropRoot(rootId);
  }

  /** One query; `route`: the route whose service asks (its refusals are counted there). */
  async lsp(q: LspQuery, signal: Abortable, route: string = ops.query.route): Promise<LspAnswer> {
    const a = this.arrive(q, route);
    if (q.op === 'workspaceSymbols') return this.run(a, signal, (w) => this.workspaceSymbolsAnswer(w));
    const row = this.serverFor(q.path!, a.info.languages);
    const key = ResultCache.keyOf(row.name, q);
    // A hit implies the file passed its checks when it was first asked: the root is immutable.
    const hit = this.cache.getBody(a.at.root, key);
    if (hit) return parseKept<LspAnswer>(hit, elapsed(a.t0));
    const { answer, json } = await this.run(a, signal, (w) => this.answer(w, row));
    this.remember(a.at.root, key, answer, json);
    return answer;
  }

  /**
   * POST /v1/code/lsp's way in: the answer as the bytes to send, serialised once (the
   * same bytes are kept by the cache). A hit is a look-up and a write in the caller's
   * own turn: answered as it is, not as a promise, and nothing past the key is made for
   * it, not even the deadline (`onHangUp` registers the client's hang-up, only when the
   * query goes to a server). Admission refusals throw here, before any promise.
   */
  lspBody(q: LspQuery, onHangUp: (gone: () => void) => void): SentAnswer | Promise<SentAnswer> {
    const a = this.arrive(q, ops.query.route);
    if (q.op === 'workspaceSymbols') return this.workspaceSymbolsBody(a, onHangUp);
    const row = this.serverFor(q.path!, a.info.languages);
    const key = ResultCache.keyOf(row.name, q);
    const hit = this.cache.getBody(a.at.root, key);
    if (hit) return { server: row.name, body: sentBody(hit, elapsed(a.t0)) };
    return this.missBody(a, row, key, onHangUp);
  }

  private async workspaceSymbolsBody(a: Arrival, onHangUp: (gone: () => void) => void): Promise<SentAnswer> {
    const answer = await this.run(a, onHangUp, (w) => this.workspaceSymbolsAnswer(w));
    return { server: String(answer.server ?? ''), body: Buffer.from(JSON.stringify(answer)) };
  }

  private async missBody(a: Arrival, row: ServerRow, key: string, onHangUp: (gone: () => void) => void): Promise<SentAnswer> {
    const { answer, json } = await this.run(a, onHangUp, (w) => this.answer(w, row));
    const kept = this.remember(a.at.root, key, answer, json);
    const ms = answer.elapsed_ms ?? 0;
    return { server: row.name, body: kept ? sentBody(kept, ms) : sentOf(answer, json, ms) };
  }

  /** Admission (not_ready, busy, need_tree) and the deadline's start: what every query pays before anything else. */
  private arrive(q: LspQuery, route: string): Arrival {
    const t0 = performance.now();
    const deadlineAt = Date.now() + this.deps.config.queryTimeoutMs - this.deps.config.cleanupReserveMs;
    // ops.query marks the root used in the look-up that admits it.
    const info = this.deps.admission.admit(q, ops.query, route);
    let at = this.placeOf.get(info);
    if (!at) {
      const { store } = this.deps;
      this.placeOf.set(info, (at = { root: { id: rootId(q), generation: info.generation }, treeDir: store.treeDir(q), depsDir: store.depsDir(q) }));
    }
    return { q, route, t0, deadlineAt, info, at };
  }

  /** `fn` under the query's deadline (from arrival) and the client's signal or hang-up; the timer is cleared however it ends. */
  private async run<T>(a: Arrival, client: Abortable | ((gone: () => void) => void), fn: (w: Work) => Promise<T>): Promise<T> {
    const ms = a.deadlineAt - Date.now();
    const dl = typeof client === 'function' ? hangUpDeadline(client, ms) : Object.assign(deadline(client, ms), { client });
    const w: Work = {
      q: a.q,
      route: a.route,
      root: a.at.root,
      languages: a.info.languages,
      treeDir: a.at.treeDir,
      depsDir: a.at.depsDir,
      t0: a.t0,
      deadline: dl.signal,
      deadlineAt: a.deadlineAt,
      client: dl.client,
      stages: [],
    };
    try {
      return await fn(w);
    } finally {
      dl.clear();
    }
  }

  private async answer(w: Work, row: ServerRow): Promise<Finished> {
    const { q } = w;
    // The workspace look-up and the target's checks read different files: both at once
    // (a cold query waits on each; the look-up never rejects).
    const workspace = this.workspaces.find(w.root, w.treeDir, q.path!, row.rootMarkers);
    const target = await this.readTarget(w.root, w.treeDir, q.path!);
    mark(w, 'target');

    let before: DependencyNote | undefined;
    const r = await this.withSession(
      w,
      row,
      workspace,
      async (session) => {
        const { uri, complete } = await this.openAndWait(w, session, target);
        mark(w, 'ready');
        const out = await runOp(this.opContext(w, session, uri, target, cursorScope(w.root, row.name, q)));
        mark(w, 'answered');
        return Object.assign(out, { complete: out.complete && complete, notes: session.notes });
      },
      (n) => (before = n),
    );
    const done = this.finish(w, row.name, r, noteOf(before, this.deps.dependencies, q, row));
    const ms = done.answer.elapsed_ms ?? 0;
    if (ms >= SLOW_QUERY_MS) this.deps.log.info({ root: w.root.id, op: q.op, server: row.name, ms, stages: stagesOf(w) }, 'slow query');
    return done;
  }

  /**
   * POST /v1/check's way in (src/check/): the scratch session of `path`'s server and
   * workspace on this root (pool key purpose 'check', which no plain query or warm-up
   * leases), through the same checks, fair share, dependencies and error mapping as a
   * query, held for `fn`. `fn` may change its documents and must restore them.
   */
  async scratch<T>(key: RootKey, path: string, deadlineAt: number, signal: Abortable, fn: (c: ScratchContext) => Promise<T>): Promise<T> {
    const { store } = this.deps;
    // Admitted by the check's own entry (ops.check); the root may have gone since.
    const info = store.get(key);
    if (!info) throw errors.needTree();
    const row = this.serverFor(path, info.languages);
    const dl = deadline(signal, deadlineAt - Date.now());
    const q: LspQuery = { org: key.org, repo: key.repo, sha: key.sha, op: 'diagnostics', path, encoding: 'utf-16', includeDeclaration: true, context: 0 };
    const w: Work = {
      q,
      route: ops.check.route,
      root: { id: rootId(key), generation: info.generation },
      languages: info.languages,
      treeDir: store.treeDir(key),
      depsDir: store.depsDir(key),
      t0: performance.now(),
      deadline: dl.signal,
      deadlineAt,
      client: signal,
      stages: [],
    };
    try {
      return await this.withSession(
        w,
        row,
        this.workspaces.find(w.root, w.treeDir, path, row.rootMarkers),
        async (session) => {
          const budgetMs = () => Math.max(0, Math.min(this.deps.config.readyTimeoutMs, (deadlineAt - Date.now()) / 2));
          return fn({
            session,
            deadline: w.deadline,
            deadlineAt,
            diagnosticsWindowMs: this.deps.config.diagnosticsWindowMs,
            waitReady: (uri) => session.waitReady(uri, budgetMs(), w.deadline),
            diagnostics: (raw, rel, lines) => {
              const base = this.opContext(w, session, '', { path: rel } as TargetFile).projection;
              const readLines: ReadLines = (coord, start, count) =>
                lines && coord.kind === 'tree' && coord.path === rel ? lines.slice(start, start + count) : base.readLines(coord, start, count);
              return projectDiagnostics(raw, {
                ...base,
                readLines,
                document: { kind: 'tree', path: rel, jailPath: treeJailPath(rel) },
                maxLocations: this.deps.config.maxLocations,
                scrub: this.scrubberFor(w),
              });
            },
          });
        },
        undefined,
        'check',
      );
    } finally {
      dl.clear();
    }
  }

  /** A stored file's text through the checks every query's target passes; undefined when the tree has no such file. */
  async readStored(key: RootKey, path: string): Promise<string | undefined> {
    const info = this.deps.store.get(key);
    if (!info) throw errors.needTree();
    try {
      return (await this.readTarget({ id: rootId(key), generation: info.generation }, this.deps.store.treeDir(key), path)).text;
    } catch (err) {
      if (isAppError(err) && err.code === 'no_such_file') return undefined;
      throw err;
    }
  }

  /** A checked target file (cached; its lines handed to `lines` when read). */
  private readTarget(root: RootRef, treeDir: string, rel: string): Promise<TargetFile> {
    return this.targets.read(root, treeDir, rel, this.deps.config.maxTargetFileBytes);
  }

  /** The closed table's choice for a file of a root holding `rootLanguages`, or 422 no_server saying why. */
  private serverFor(path: string, rootLanguages: readonly Language[]): ServerRow {
    const lang = languageOf(path);
    if (!lang) throw errors.noServer(`No language server serves files like ${JSON.stringify(path)}.`);
    const row = this.deps.table.choose(lang.language, rootLanguages, this.installed);
    if (!row) throw errors.noServer(`No language server for ${lang.language} is configured.`);
    const av = this.deps.health.servers[row.name];
    if (av && !av.available) throw errors.noServer(`The ${lang.language} server (${row.name}) is unavailable: ${this.ownText(av.reason ?? 'not installed')}.`);
    return row;
  }

  /**
   * Lease the session for (row, root, the workspace looked up), wait for it to start and
   * for an in-flight slot, run `fn`, release. The lease is released when the whole
   * request is done, whatever happened.
   */
  private async withSession<T>(
    w: Work,
    row: ServerRow,
    workspaceOf: Promise<string>,
    fn: (s: Session) => Promise<T>,
    leased?: (note: DependencyNote | undefined) => void,
    purpose?: 'check',
  ): Promise<T> {
    const { pool, admission } = this.deps;
    const org = w.q.org;
    admission.wait(org, w.route);
    // Waiting until the slot is taken or the work ends, whichever is first (no named arrow per query: util/deadline.ts).
    let waiting = true;
    let lease: Lease | undefined;
    let releaseSlot: (() => void) | undefined;
    try {
      // A fetch still bringing what this server reads is waited for briefly (it may
      // be about to end); past that the session starts on the tree alone and is
      // replaced when the fetch ends. The query counts as waiting meanwhile.
      await awaitDependencies(this.deps.dependencies, w.q, row, w.deadlineAt, w.deadline, this.deps.config.fetchWaitMs);
      mark(w, 'dependencies');
      const workspace = await workspaceOf;
      if (row.needsPackage) await this.assertNeeds(w, row, workspace);
      // Where the dependencies stood when the session was chosen, in the same turn: see noteOf.
      leased?.(dependencyNote(this.deps.dependencies, w.q, row));
      // Object.assign, not fields and spreads in one literal (lsp-ops.ts withProjection: V8's slow path).
      lease = pool.acquire(
        Object.assign(
          { row, rootId: w.root.id, generation: w.root.generation, workspace, treeHostDir: w.treeDir },
          dependencyMounts(this.deps.dependencies, w.q, row),
          purpose ? { purpose } : {},
        ),
      );
      // How the session was found: started by this query, by a warm-up (and how far), or long running.
      mark(w, `leased_${lease.session.state.kind}${lease.session.warm ? `_${lease.session.warm}` : ''}`);
      // Not awaited when ready already (most queries): a turn of the loop less.
      if (lease.session.state.kind !== 'ready') await lease.session.whenReady(w.deadline);
      mark(w, 'initialized');
      this.noteHierarchyOps(row, lease.session);
      this.noteEditOps(row, lease.session);
      releaseSlot = await lease.session.slot(w.deadline);
      waiting = false;
      admission.queue.give(org);
      return await fn(lease.session);
    } catch (err) {
      if (err instanceof SessionFailedError) await err.tailSettled;
      throw this.mapError(err, row, w, lease?.session.notes ?? []);
    } finally {
      if (waiting) admission.queue.give(org);
      releaseSlot?.();
      lease?.release();
    }
  }

  /** A row's `needsPackage` where its server would look for it, or 422 no_server saying what is missing: no session starts for nothing. */
  private async assertNeeds(w: Work, row: ServerRow, workspace: string): Promise<void> {
    const need = row.needsPackage;
    if (!need) return;
    const { depBinds } = dependencyMounts(this.deps.dependencies, w.q, row);
    if (await packageVisible(need.name, { treeHostDir: w.treeDir, workspace, depBinds })) return;
    throw errors.noServer(`${need.absent}; none is visible from the workspace ${JSON.stringify(workspace || '.')}.`);
  }

  /**
   * /readyz says what a row with no declared hierarchy ops answers once a session of it
   * has started (its capabilities). A declaration wins: it was measured, and it knows
   * what a capability overstates (clangd 16 refuses outgoingCalls).
   */
  private noteHierarchyOps(row: ServerRow, session: Session): void {
    const av = this.deps.health.servers[row.name];
    if (!av || row.hierarchyOps || session.state.kind !== 'ready' || av.hierarchy_ops_from === 'session') return;
    av.hierarchy_ops = hierarchyOpsOf(session);
    av.hierarchy_ops_from = 'session';
  }

  /**
   * /readyz's edit ops of a row, from its first ready session on: the capabilities
   * (renameProvider, codeActionProvider) decide every edit query, so they replace the
   * row's declaration, which only says it before any session started.
   */
  private noteEditOps(row: ServerRow, session: Session): void {
    const av = this.deps.health.servers[row.name];
    if (!av || session.state.kind !== 'ready' || av.edit_ops_from === 'session') return;
    av.edit_ops = editOpsOf(session);
    av.edit_ops_from = 'session';
  }

  /** didOpen (once per session) and the bounded readiness wait. */
  private async openAndWait(w: Work, session: Session, target: TargetFile): Promise<{ uri: string; complete: boolean }> {
    const lang = languageOf(target.path)!;
    const uri = session.open(target.path, lang.languageId, target.text);
    // Half of what is left at most: a server still indexing at the bound must leave
    // time to answer (incomplete) rather than turn the whole query into a 504.
    const budgetMs = Math.max(0, Math.min(this.deps.config.readyTimeoutMs, (w.deadlineAt - Date.now()) / 2));
    const complete = await session.waitReady(uri, budgetMs, w.deadline);
    if (w.deadline.aborted) throw w.deadline.reason as Error;
    return { uri, complete };
  }

  private opContext(w: Work, session: Session, uri: string, target: TargetFile, scope = ''): OpContext {
    // Methods, not arrows, below: no name defined per query (util/deadline.ts); hence no `this` in them.
    const { targets } = this;
    const { maxTargetFileBytes } = this.deps.config;
    const dirs = {
      treeHostDir: w.treeDir,
      depsHostDir: w.depsDir,
      // The binds alone (dependencyMounts' depBinds), not the env and settings a new session needs.
      mounts: this.deps.dependencies.serveBinds(w.q, TREE_AT),
      lentDeps: this.deps.dependencies?.lentDeps?.(w.q) ?? [],
    };
    const document: FileCoordinate = { kind: 'tree', path: target.path, jailPath: treeJailPath(target.path) };
    return {
      q: w.q,
      session,
      uri,
      target,
      document,
      projection: {
        encoding: w.q.encoding,
        serverEncoding: session.encoding,
        readLines: this.lines.reader(w.root, dirs),
        readPackageVersion: this.lines.versionReader(dirs),
        readComposerVersion: this.lines.composerVersionReader(w.root, dirs),
        readPythonDist: this.lines.pythonDistReader(w.root, dirs),
        rustSrcVersion: session.row.stdSourcesVersion?.(),
        readRef(c: ExternalCoordinate) {
          return readRefOf(c.jailPath, dirs);
        },
      },
      scrub: this.scrubberFor(w),
      deadline: w.deadline,
      deadlineAt: w.deadlineAt,
      readTree(path: string) {
        return targets.read(w.root, w.treeDir, path, maxTargetFileBytes);
      },
      cursorScope: scope,
      limits: this.limits,
    };
  }

  private scrubberFor(w: Work): Scrubber {
    let s = this.scrubbers.get(w.root, w.treeDir);
    if (!s) {
      s = createScrubber({ treeHostDirs: [w.treeDir], knownPaths: knownHostPaths(this.deps.config.dataDir) });
      this.scrubbers.set(w.root, w.treeDir, s);
    }
    return s;
  }

  /**
   * workspaceSymbols has no path: ask every server chosen for the root's languages,
   * each on the session of a representative file (opened so a server that builds
   * projects from open files has one), and merge in table order. A server that has no
   * workspace symbols (the CSS server) is left out, not the answer: else every root
   * holding a stylesheet refused the op, and /ask with it (422 no_server); only when
   * no server answers is it refused.
   */
  private async workspaceSymbolsAnswer(w: Work): Promise<LspAnswer> {
    const rows: ServerRow[] = [];
    const asked = w.q.languages;
    for (const lang of asked ? w.languages.filter((l) => asked.includes(l)) : w.languages) {
      const row = this.deps.table.choose(lang, w.languages, this.installed);
      if (row && this.installed(row) && !rows.includes(row)) rows.push(row);
    }
    if (rows.length === 0)
      throw errors.noServer(asked ? `No language server serves ${asked.join(', ')} in this root.` : 'No language server serves any language of this root.');
    rows.sort((a, b) => this.deps.table.rows.indexOf(a) - this.deps.table.rows.indexOf(b));
    const name = rows.map((r) => r.name).join(',');
    const key = ResultCache.keyOf(name, w.q);
    const hit = this.cache.getBody(w.root, key);
    if (hit) return parseKept<LspAnswer>(hit, elapsed(w.t0));

    const before: (DependencyNote | undefined)[] = [];
    let lacking: AppError | undefined;
    const parts = await Promise.all(
      rows.map(async (row) => {
        const rel = await findFileOf(w.treeDir, (p) => {
          const l = languageOf(p);
          return l !== undefined && row.languages.includes(l.language);
        });
        if (rel === undefined) return undefined;
        const target = await this.readTarget(w.root, w.treeDir, rel).catch(() => undefined);
        if (!target) return undefined;
        return this.withSession(
          w,
          row,
          this.workspaces.find(w.root, w.treeDir, rel, row.rootMarkers),
          async (session) => {
            const { uri, complete } = await this.openAndWait(w, session, target);
            const out = await workspaceSymbols(this.opContext(w, session, uri, target, cursorScope(w.root, name, w.q)));
            return Object.assign(out, { complete: out.complete && complete, notes: session.notes });
          },
          (n) => (before[rows.indexOf(row)] = n),
        ).catch((err: unknown) => {
          // A row that cannot serve this root (the Angular row without @angular/core, a
          // server without workspace symbols) leaves the others' answer standing.
          if (!isAppError(err) || err.code !== 'no_server') throw err;
          lacking = err;
          return undefined;
        });
      }),
    );
    const got = parts.filter((p): p is Noted<SymbolsResult> => p !== undefined);
    if (got.length === 0 && lacking) throw lacking;
    const max = this.deps.config.maxLocations;
    const symbols = got.flatMap((p) => p.answer.symbols);
    const merged: Noted<SymbolsResult> = {
      kind: 'symbols',
      answer: {
        symbols: symbols.slice(0, max),
        total: got.reduce((n, p) => n + p.answer.total, 0),
        other: got.reduce((n, p) => n + p.answer.other, 0),
        truncated: got.some((p) => p.answer.truncated) || symbols.length > max,
      },
      complete: got.length > 0 && got.every((p) => p.complete),
      notes: got.flatMap((p) => p.notes),
    };
    const { answer, json } = this.finish(w, name, merged, rows.length === 1 ? noteOf(before[0], this.deps.dependencies, w.q, rows[0]!) : undefined);
    if (before.some((n) => n?.may_change)) return answer; // some server answered without dependencies on their way
    this.remember(w.root, key, answer, json);
    return answer;
  }

  /**
   * Cache an answer, but not one made while its dependencies were downloading (its note,
   * `noteOf`, says `running` from before its session was leased to its end): the
   * fetch's end drops the root's answers, and one finishing just after that drop
   * would otherwise stay, saying `running`, for as long as the root. Returns the kept
   * bytes, when kept.
   */
  private remember(root: RootRef, key: string, answer: LspAnswer, json: string): Buffer | undefined {
    if ((answer.dependencies as { state?: string } | undefined)?.state === 'running' || !this.cache.keeps(answer)) return undefined;
    const kept = keptOf(answer, json);
    this.cache.setBody(root, key, answer, kept);
    return kept;
  }

  /** The common fields of every answer, then the size cap; with the JSON the cap measured (elapsed_ms 0, last: answer-body.ts). */
  private finish(w: Work, server: string, r: Noted<OpResult>, dependencies?: DependencyNote): Finished {
    // Built by Object.assign in this order (the bytes sent follow it), not as one literal of fields and spreads (lsp-ops.ts withProjection).
    const { answer, json } = capAnswerJson<LspAnswer>(
      Object.assign(
        { op: w.q.op, server },
        r.answer,
        // lspd's own notes quote what the tree gave (a removed compile argument, its host path with it): scrubbed as server text is.
        r.notes.length ? { notes: r.notes.map(this.scrubberFor(w)) } : {},
        { incomplete: !r.complete, untrusted: true, dependency_freshness: DEPENDENCY_FRESHNESS },
        dependencies ? { dependencies } : {},
        { elapsed_ms: 0 },
      ),
      this.deps.config.maxAnswerBytes,
      r.kind === 'locations' ? r.page : undefined,
    );
    answer.elapsed_ms = elapsed(w.t0);
    return { answer, json };
  }

  /** Turn what went wrong into the API's error, naming the server and never a host path. */
  private mapError(err: unknown, row: ServerRow, w: Work, notes: readonly string[] = []): unknown {
    // A start that keeps failing is refused with its last error, which quotes the jail's spawn (host paths).
    if (isAppError(err)) return err.code === 'server_unavailable' ? scrubbedError(err, this.scrubberFor(w)) : err;
    const { config } = this.deps;
    if (w.client.aborted) return errors.timeout('The client went away; the query was cancelled.');
    if (w.deadline.aborted) {
      return errors.timeout(`${row.name} did not answer within ${config.queryTimeoutMs} ms; the request was cancelled.`);
    }
    if (err instanceof SessionFailedError && err.refusal) return err.refusal;
    if (err instanceof SessionFailedError) {
      const extra: Record<string, unknown> = { retry_after: 1, server: row.name };
      const tail = err.stderrTail.trim();
      if (tail) extra.server_stderr = this.scrubberFor(w)(tail.slice(-1024));
      const why = this.scrubberFor(w)(err.message);
      const msg =
        err.phase === 'start' ? `${row.name} failed to start: ${why}.` : `${row.name} failed while answering: ${why}; the next query starts a fresh one.`;
      return new AppError('server_unavailable', 503, msg, extra);
    }
    if (err instanceof ResponseError) {
      // The server's own words and the session's notes (gopls on a module whose go.mod
      // needs a newer Go: "no package metadata", and the note saying why), scrubbed.
      const e = errors.serverUnavailable(`${row.name} answered the request with an error (code ${err.code}).`, 1);
      const said = this.scrubberFor(w)(err.message.slice(0, 512)).trim();
      if (said) e.extra.server_message = said;
      if (notes.length) e.extra.notes = [...notes];
      return e;
    }
    return err;
  }
}

/**
 * What a paging cursor is bound to: the query on this upload of the root, less the
 * cursor and page size themselves (the next page's query carries the cursor, and
 * may ask for another size), so a cursor works on its own query's next page only.
 */
function cursorScope(root: RootRef, server: string, q: LspQuery): string {
  return rootScope(root) + ResultCache.keyOf(server, q, false);
}

/** What a check's work on its scratch session is given (QueryService.scratch). */
export interface ScratchContext {
  session: Session;
  deadline: Abortable;
  deadlineAt: number;
  diagnosticsWindowMs: number;
  /** The row's readiness for a just-opened document, bounded as a query's is; false past the bound. */
  waitReady(uri: string): Promise<boolean>;
  /** A raw diagnostics answer for tree file `rel` projected as the diagnostics op does; `lines` are its text when patched. */
  diagnostics(raw: unknown, rel: string, lines?: readonly string[]): Promise<DiagnosticsAnswer>;
}

/** An answer and its JSON as the size cap measured it: what is kept and sent is cut from that, not serialised again. */
interface Finished {
  answer: LspAnswer;
  json: string;
}

/** An op's result with its session's notes (what a bound or a refused flag changed in what its server sees). */
type Noted<R extends OpResult> = R & { notes: readonly string[] };

function elapsed(t0: number): number {
  return Math.round((performance.now() - t0) * 10) / 10;
}

/**
 * What an answer says of its dependencies: `running` if they were on their way when
 * its session was chosen (`before`, taken in the same turn as the lease), even when
 * the fetch ended before the answer did. That session was started without them and
 * is replaced only once released, so the answer was made without them; noted `done`
 * it was cached and stayed wrong for as long as the root (bench/monorepo: a one-file
 * commit's dependency definition, asked while its base's dependencies were being
 * linked in, kept landing on the import). Else where they stand now (only then read).
 */
function noteOf(before: DependencyNote | undefined, src: DependencySource, key: RootKey, row: ServerRow): DependencyNote | undefined {
  return before?.may_change ? before : dependencyNote(src, key, row);
}
