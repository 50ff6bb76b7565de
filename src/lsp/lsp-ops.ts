// Each /v1/code/lsp op as one LSP request (or diagnostics wait) on a ready session,
// its raw result handed to the projection (projection.ts, projection-text.ts) for
// paths, coordinates, previews, scrubbing, caps and encodings. Nothing here maps a
// path or touches server text itself.
// Requests: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#languageFeatures
import { editOps, graphOps, type EditOp, type GraphOp, type LspOp, type LspQuery } from '../api/schemas.js';
import { errors, isAppError } from '../errors.js';
import { declarationAnchor, type Anchor } from './graph-anchor.js';
import { projectGraph, type GraphAnswer, type GraphShape } from './answer/call-graph.js';
import type { FileCoordinate } from './answer/coordinates.js';
import { fromUtf16Index, toUtf16Index, type Encoding } from './wire/encoding.js';
import { isObject, isRange, type Position } from './wire/lsp-types.js';
import {
  projectDiagnostics,
  projectHover,
  projectLocations,
  projectSymbols,
  type DiagnosticsAnswer,
  type HoverAnswer,
  type LocationsAnswer,
  type LocationsContext,
  type PageState,
  type ProjectionContext,
  type SymbolsAnswer,
  type SymbolsContext,
} from './answer/projection.js';
import type { Scrubber } from './answer/scrub.js';
import type { Session } from './session/session.js';
import type { TargetFile } from './target-file.js';
import { isMethodNotFound } from './wire/transport.js';
import { createResolver } from './answer/coordinates.js';
import { EditError } from '../edit/text-edits.js';
import { renderWorkspaceEdit, type RenderedEdit } from '../edit/workspace-edit.js';
import { renderCodeActions, type CodeActionsAnswer } from '../edit/code-actions.js';
import type { Abortable } from '../util/deadline.js';

/** The server capability each op needs (diagnostics: push always works, pull when offered). */
const PROVIDER: Record<LspOp, string | undefined> = {
  definition: 'definitionProvider',
  typeDefinition: 'typeDefinitionProvider',
  implementation: 'implementationProvider',
  references: 'referencesProvider',
  hover: 'hoverProvider',
  documentSymbols: 'documentSymbolProvider',
  workspaceSymbols: 'workspaceSymbolProvider',
  diagnostics: undefined,
  incomingCalls: 'callHierarchyProvider',
  outgoingCalls: 'callHierarchyProvider',
  supertypes: 'typeHierarchyProvider',
  subtypes: 'typeHierarchyProvider',
  rename: 'renameProvider',
  codeActions: 'codeActionProvider',
};

/** A graph op: the prepare request at the position, then one expansion request per node. */
const GRAPH: Record<GraphOp, { prepare: string; expand: string; shape: GraphShape }> = {
  incomingCalls: { prepare: 'textDocument/prepareCallHierarchy', expand: 'callHierarchy/incomingCalls', shape: 'incoming' },
  outgoingCalls: { prepare: 'textDocument/prepareCallHierarchy', expand: 'callHierarchy/outgoingCalls', shape: 'outgoing' },
  supertypes: { prepare: 'textDocument/prepareTypeHierarchy', expand: 'typeHierarchy/supertypes', shape: 'types' },
  subtypes: { prepare: 'textDocument/prepareTypeHierarchy', expand: 'typeHierarchy/subtypes', shape: 'types' },
};

const METHOD: Partial<Record<LspOp, string>> = {
  definition: 'textDocument/definition',
  typeDefinition: 'textDocument/typeDefinition',
  implementation: 'textDocument/implementation',
  references: 'textDocument/references',
};

export interface OpContext {
  q: LspQuery;
  session: Session;
  /** The document's URI (already opened). */
  uri: string;
  target: TargetFile;
  document: FileCoordinate;
  projection: ProjectionContext;
  scrub: Scrubber;
  deadline: Abortable;
  /** Epoch ms at which the work deadline passes. */
  deadlineAt: number;
  limits: { maxLocations: number; maxHoverBytes: number; diagnosticsWindowMs: number; maxCallNodes: number; maxAnswerBytes: number };
  /** Binds paging cursors to this exact query. */
  cursorScope: string;
  /** A checked file of the tree, whole (an edit's patch needs the text it changes). */
  readTree(path: string): Promise<TargetFile>;
}

/**
 * The op's part of the answer, by the kind of answer it projects to. `complete` false:
 * a diagnostics window closed with nothing published (or the server was not ready).
 * A locations page carries its paging state beside the answer, for the size cap.
 */
export type OpResult =
  | { kind: 'locations'; answer: LocationsAnswer; page: PageState; complete: boolean }
  | { kind: 'hover'; answer: HoverAnswer; complete: boolean }
  | SymbolsResult
  | { kind: 'diagnostics'; answer: DiagnosticsAnswer; complete: boolean }
  | { kind: 'graph'; answer: GraphAnswer; complete: boolean }
  | { kind: 'edit'; answer: RenderedEdit; complete: boolean }
  | { kind: 'actions'; answer: CodeActionsAnswer; complete: boolean };
export type SymbolsResult = { kind: 'symbols'; answer: SymbolsAnswer; complete: boolean };

export function checkSupported(session: Session, op: LspOp): void {
  const p = PROVIDER[op];
  // Capabilities are known only while the session is ready. One that died after it was
  // leased is not a server lacking the op (422 reads as permanent): the request below
  // then fails with the session's own error, a 503 the caller retries.
  if (p !== undefined && session.state.kind === 'ready' && !session.supports(p)) {
    throw errors.noServer(`${session.row.name} does not answer ${op}.`);
  }
}

/** The hierarchy ops a ready session's server answers, by its initialize capabilities. */
export function hierarchyOpsOf(session: Session): GraphOp[] {
  return graphOps.filter((op) => session.supports(PROVIDER[op]!));
}

/** The edit ops a ready session's server answers, by its initialize capabilities. */
export function editOpsOf(session: Session): EditOp[] {
  return editOps.filter((op) => session.supports(PROVIDER[op]!));
}

/** The caller's position (or another of the query's, `at`), checked against the file and converted to the server's units. */
export function serverPosition(q: LspQuery, target: TargetFile, serverEncoding: Encoding, at = { line: q.line!, character: q.character! }): Position {
  const { line, character } = at;
  const text = target.lines[line];
  if (text === undefined) throw errors.badRequest(`line ${line} is past the end of ${q.path} (${target.lines.length} lines).`);
  const width = fromUtf16Index(text, text.length, q.encoding);
  if (character > width) throw errors.badRequest(`character ${character} is past the end of line ${line} (${width} ${q.encoding} units).`);
  const index = toUtf16Index(text, character, q.encoding);
  return { line, character: fromUtf16Index(text, index, serverEncoding) };
}

/**
 * The file's diagnostics as the server gave them (server units, unprojected): pulled
 * where the server answers pulls (TS 7 publishes nothing unasked), else the pushed ones
 * within the window. `complete` false: nothing was published in the window ("unknown").
 */
async function serverDiagnostics(c: OpContext): Promise<{ raw: unknown; complete: boolean }> {
  const { session, uri, deadline } = c;
  if (session.pullsDiagnostics) return { raw: await session.request('textDocument/diagnostic', { textDocument: { uri } }, deadline), complete: true };
  const windowMs = Math.max(0, Math.min(c.limits.diagnosticsWindowMs, c.deadlineAt - Date.now()));
  const pub = await session.pushedDiagnostics(uri, windowMs, deadline);
  if (deadline.aborted) throw deadline.reason as Error;
  return { raw: pub?.items ?? [], complete: pub !== undefined };
}

/**
 * The projection's context with an op's own fields. Object.assign from `{}`, never a
 * spread followed by more fields (`{ ...c.projection, x }`): V8 builds those on a slow
 * path, ~1 µs a field (bench/hot-profile), and every answer makes one.
 */
function withProjection<T extends object>(c: OpContext, own: T): ProjectionContext & T {
  return Object.assign({}, c.projection, own);
}

export async function runOp(c: OpContext): Promise<OpResult> {
  const { q, session, uri, deadline } = c;
  checkSupported(session, q.op);
  const textDocument = { uri };
  switch (q.op) {
    case 'definition':
    case 'typeDefinition':
    case 'implementation':
    case 'references': {
      const position = serverPosition(q, c.target, session.encoding);
      const params = q.op === 'references' ? { textDocument, position, context: { includeDeclaration: q.includeDeclaration } } : { textDocument, position };
      const raw = await session.request(METHOD[q.op]!, params, deadline);
      const ctx: LocationsContext = withProjection(c, { maxLocations: c.limits.maxLocations, context: q.context, cursorScope: c.cursorScope });
      if (q.limit !== undefined) ctx.limit = q.limit;
      if (q.cursor !== undefined) ctx.cursor = q.cursor;
      const { answer, page } = await projectLocations(raw, ctx);
      return { kind: 'locations', answer, page, complete: true };
    }
    case 'hover': {
      const position = serverPosition(q, c.target, session.encoding);
      const raw = await session.request('textDocument/hover', { textDocument, position }, deadline);
      const answer = await projectHover(raw, withProjection(c, { document: c.document, maxHoverBytes: c.limits.maxHoverBytes, scrub: c.scrub }));
      return { kind: 'hover', answer, complete: true };
    }
    case 'documentSymbols': {
      const raw = await session.request('textDocument/documentSymbol', { textDocument }, deadline);
      const ctx: SymbolsContext = withProjection(c, { document: c.document, maxLocations: c.limits.maxLocations, scrub: c.scrub });
      if (q.query) ctx.query = q.query;
      const answer = await projectSymbols(raw, ctx);
      return { kind: 'symbols', answer, complete: true };
    }
    case 'diagnostics': {
      const { raw, complete } = await serverDiagnostics(c);
      const answer = await projectDiagnostics(raw, withProjection(c, { document: c.document, maxLocations: c.limits.maxLocations, scrub: c.scrub }));
      return { kind: 'diagnostics', answer, complete };
    }
    case 'workspaceSymbols':
      return workspaceSymbols(c);
    case 'rename':
      return { kind: 'edit', answer: await rename(c), complete: true };
    case 'codeActions':
      return codeActions(c);
    case 'incomingCalls':
    case 'outgoingCalls':
    case 'supertypes':
    case 'subtypes': {
      const g = GRAPH[q.op];
      const position = serverPosition(q, c.target, session.encoding);
      // A capability covers both directions, but a server may still refuse one
      // (clangd 16: outgoingCalls is MethodNotFound): that is "does not answer", not a failure.
      const ask = (method: string, params: object) =>
        session.request(method, params, deadline).catch((err: unknown) => {
          if (isMethodNotFound(err)) throw errors.noServer(`${session.row.name} does not answer ${q.op}.`);
          throw err;
        });
      const walk = async (at: Anchor) =>
        projectGraph(await ask(g.prepare, at), {
          ...c.projection,
          shape: g.shape,
          depth: q.depth ?? 1,
          maxNodes: c.limits.maxCallNodes,
          scrub: c.scrub,
          expand: (item) => ask(g.expand, { item }),
        });
      const answer = await walk({ textDocument, position });
      if (answer.nodes.some((n) => n.depth > 0)) return { kind: 'graph', answer, complete: true };
      // Nothing below the roots: the position may be an import or a use; ask at the declaration.
      const declared = await declarationAnchor(session, { textDocument, position }, deadline);
      if (!declared) return { kind: 'graph', answer, complete: true };
      const again = await walk(declared).catch((err: unknown) => {
        // A server that cannot prepare there (a file it has not opened) keeps the first answer.
        if (deadline.aborted || isAppError(err)) throw err;
        return undefined;
      });
      return { kind: 'graph', answer: again && again.nodes.length > 0 ? again : answer, complete: true };
    }
  }
}

/** workspace/symbol on a session whose project was loaded by opening `uri`. */
export async function workspaceSymbols(c: OpContext): Promise<SymbolsResult> {
  checkSupported(c.session, 'workspaceSymbols');
  const raw = await c.session.request('workspace/symbol', { query: c.q.query ?? '' }, c.deadline);
  const answer = await projectSymbols(raw, withProjection(c, { maxLocations: c.limits.maxLocations, scrub: c.scrub }));
  return { kind: 'symbols', answer, complete: true };
}

/** At most this many of the range's diagnostics go to the server as the actions' context. */
const MAX_CONTEXT_DIAGNOSTICS = 64;

/**
 * codeActions: the range's diagnostics (pulled or pushed, as `diagnostics` gets them)
 * go in the request's context, so quick fixes for them come back; each action's edit,
 * resolved where the server defers it, is rendered as a patch (src/edit/code-actions.ts).
 * `incomplete` when the diagnostics were unknown: quick fixes may be missing.
 */
async function codeActions(c: OpContext): Promise<OpResult> {
  const { q, session, uri, deadline } = c;
  const start = serverPosition(q, c.target, session.encoding);
  const end = q.endLine === undefined ? start : serverPosition(q, c.target, session.encoding, { line: q.endLine, character: q.endCharacter! });
  const range = { start, end };
  const { raw, complete } = await serverDiagnostics(c);
  const all: unknown[] = Array.isArray(raw) ? raw : isObject(raw) && Array.isArray(raw.items) ? raw.items : [];
  // A diagnostic touches the range when neither ends before the other starts (server units, same file).
  const before = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.character < b.character);
  const diagnostics = all
    .filter((d): d is { range: { start: Position; end: Position } } => isObject(d) && isRange(d.range))
    .filter((d) => !before(d.range.end, range.start) && !before(range.end, d.range.start))
    .slice(0, MAX_CONTEXT_DIAGNOSTICS);
  const context = { diagnostics, triggerKind: 1, ...(q.only ? { only: q.only } : {}) };
  const answerRaw = await session.request('textDocument/codeAction', { textDocument: { uri }, range, context }, deadline);
  const caps = session.capability('codeActionProvider');
  const resolve = resolverOf(c);
  const answer = await renderCodeActions(answerRaw, {
    ...(q.only ? { only: q.only } : {}),
    canResolve: isObject(caps) && caps.resolveProvider === true,
    ...(session.row.editCommands ? { editCommands: session.row.editCommands } : {}),
    resolve: (action) => session.request('codeAction/resolve', action, deadline),
    render: (edit) =>
      renderWorkspaceEdit(edit, { resolve, readTree: (p) => c.readTree(p), serverEncoding: session.encoding, encoding: q.encoding, scrub: c.scrub }),
    fixes: async (ds) => {
      const p = await projectDiagnostics(ds, { ...c.projection, document: c.document, maxLocations: MAX_CONTEXT_DIAGNOSTICS, scrub: c.scrub });
      return p.diagnostics.map((d) => ({ message: d.message, range: d.range }));
    },
    scrub: c.scrub,
  });
  return { kind: 'actions', answer, complete };
}

/** Maps a server URI to the tree, a dependency or neither (an edit's files). */
function resolverOf(c: OpContext) {
  return createResolver({
    ...(c.projection.readPackageVersion ? { readPackageVersion: c.projection.readPackageVersion } : {}),
    ...(c.projection.readComposerVersion ? { readComposerVersion: c.projection.readComposerVersion } : {}),
    ...(c.projection.readPythonDist ? { readPythonDist: c.projection.readPythonDist } : {}),
  });
}

/**
 * rename: the server's prepareRename decides what can be renamed (where it offers
 * one), then its WorkspaceEdit is rendered as a patch of the tree. Every refusal, the
 * server's or lspd's, is 422 cannot_rename with the reason (server text scrubbed).
 */
async function rename(c: OpContext): Promise<RenderedEdit> {
  const { q, session, uri, deadline } = c;
  const textDocument = { uri };
  const position = serverPosition(q, c.target, session.encoding);
  const refuse = (why: string) => errors.cannotRename(`Cannot rename here: ${c.scrub(why)}.`);
  const serverSaid = (err: unknown) => {
    if (deadline.aborted || isAppError(err) || !(err instanceof Error) || !('code' in err)) throw err;
    return refuse(err.message || 'the server refused');
  };
  const caps = session.capability('renameProvider');
  if (isObject(caps) && caps.prepareProvider === true) {
    const prepared = await session.request('textDocument/prepareRename', { textDocument, position }, deadline).catch((err: unknown) => {
      throw serverSaid(err);
    });
    if (prepared === null || prepared === undefined) throw refuse('the server finds nothing it can rename at this position');
  }
  const raw = await session.request('textDocument/rename', { textDocument, position, newName: q.newName }, deadline).catch((err: unknown) => {
    throw serverSaid(err);
  });
  const resolve = resolverOf(c);
  let out: RenderedEdit;
  try {
    out = await renderWorkspaceEdit(raw, {
      resolve,
      readTree: (p) => c.readTree(p),
      serverEncoding: session.encoding,
      encoding: q.encoding,
      scrub: c.scrub,
    });
  } catch (err) {
    if (err instanceof EditError) throw refuse(err.message);
    throw err;
  }
  // A patch cut short applies wrongly, so it is never paged or truncated: refused whole.
  const bytes = Buffer.byteLength(JSON.stringify(out));
  if (bytes > c.limits.maxAnswerBytes) {
    throw errors.tooLarge(`The rename's edits take ${bytes} bytes, past LSPD_MAX_ANSWER_BYTES (${c.limits.maxAnswerBytes}).`, 'answer');
  }
  return out;
}
