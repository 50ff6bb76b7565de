// Name → symbol(s), with the language servers. Every step is an ordinary query of
// the LSP query service, so resolution inherits the jail, the bounds, the result
// cache and the deadlines of /v1/code/lsp; this module only decides which
// questions to ask and how to read the answers.
//
// 1. `path` given: the name is resolved where it is used: probe positions come
//    from that file's text (findOccurrences) and the server says what each one
//    means (definition).
// 2. Otherwise: workspaceSymbols(leaf), ranked by container chain (name-match.ts);
//    each chosen declaration is pinned by asking definition at its name, so the
//    answer is the server's own location (with preview) and two spellings of one
//    declaration (an overload, a re-export) group into one match.
// 3. Nothing exact: the name may be defined outside the tree (`greet` from
//    node_modules, `dep.Greet`). Files of the tree that mention it are scanned for
//    use sites and definition is asked there; the answer lands on the dependency's
//    `external` coordinate.
//    Files whose server has no workspace symbols (the CSS server) are asked for their
//    document symbols instead, between 2 and 3 (outline.ts); a custom property (no
//    symbol to it) is probed at its declarations before its uses.
// 4. Still nothing: 404 symbol_not_found with near names, never an empty success.
import { AppError, errors, isAppError } from '../errors.js';
import type { RootKey } from '../api/schemas.js';
import { chainOf, leafOf, matchQualifiers, parseSymbolName, select, type ParsedName, type SymbolLike } from './name-match.js';
import { findNameFrom, findOccurrences, fromUtf16, splitLines, toUtf16, type Encoding, type Pos } from './text-scan.js';
import type { AskContext, Loc, Range } from './types.js';
import type { LspAnswer } from '../api/responses.js';
import { languageOf, type Language } from '../languages.js';
import { previewLine } from '../lsp/answer/line-reader.js';
import { fromOutlines, lacksSymbolsOf, type LacksSymbols, type Outlined } from './outline.js';

export interface Probe {
  /** Root-relative file and a position on the name, in the caller's encoding. */
  path: string;
  line: number;
  character: number;
}

/** One resolved symbol: where the server says it is defined, and a position in the tree to ask more from. */
export interface Candidate {
  name: string;
  kind?: string | number;
  container?: string;
  /** A name that selects this candidate alone when asked again (`Server.close`, `src.a.parse`). */
  qualified: string;
  probe: Probe;
  /** Rendered definition locations (tree or external); may be empty when all were `other`. */
  definitions: Loc[];
  /** Definition locations outside the tree and its dependencies (a toolchain's stdlib): counted, never rendered. */
  other: number;
  exact: boolean;
}

export interface Resolution {
  name: ParsedName;
  /** Distinct symbols the name matched (candidates may list fewer: they are bounded). */
  matches: number;
  candidates: Candidate[];
  exact: boolean;
  via: 'symbols' | 'use-site';
  /** The server's symbol list was cut (past maxLocations): `matches` is a lower bound. */
  partial?: boolean;
  /** What bounded the search (outline.ts), for the answer's `notes`. */
  notes?: string[];
}

export interface ResolveInput {
  root: RootKey;
  symbol: string;
  path?: string;
  encoding: Encoding;
  context: number;
}

type Sym = SymbolLike & { path: string; range: Range; selectionRange?: Range };

export async function resolveName(ctx: AskContext, input: ResolveInput): Promise<Resolution> {
  const name = parseSymbolName(input.symbol);
  const lacks = lacksSymbolsOf(ctx, input.root, name.leaf, input.encoding);
  if (input.path !== undefined) {
    // The service's own checks of the file first (404 no_such_file, 413, 415, 422 no_server):
    // a caller who named a file gets the file's error, not "no such symbol".
    await ctx.lsp({ ...rootOf(input), op: 'documentSymbols', path: input.path, encoding: input.encoding });
    const found = await fromUseSites(ctx, input, name, [input.path], lacks);
    if (found.length > 0) return finish(ctx, name, found, 'use-site');
    throw errors.notFoundSymbol(
      `${JSON.stringify(name.raw)} is neither declared nor resolvable where it appears in ${input.path}; ask without path to search the whole tree.`,
    );
  }

  const languages = await languagesMentioning(ctx, input, name);
  // Refused when no server asked has workspace symbols (a root of stylesheets): their outlines still can.
  let refused: AppError | undefined;
  const ws = await ctx
    .lsp({ ...rootOf(input), op: 'workspaceSymbols', query: name.leaf, encoding: input.encoding, ...(languages ? { languages } : {}) })
    .catch((err: unknown): LspAnswer => {
      if (!isAppError(err) || err.code !== 'no_server') throw err;
      refused = err;
      return { symbols: [] } as unknown as LspAnswer;
    });
  // What that answer already says of each language's server, so outline.ts need not ask again.
  const asked = languages ?? ctx.languagesOf(input.root);
  if (refused) for (const l of asked) lacks.know(l, true);
  else if (asked.length === 1) lacks.know(asked[0]!, false);
  const symbols = ((ws.symbols ?? []) as SymbolLike[]).filter((x): x is Sym => typeof x.path === 'string' && x.range !== undefined);
  await fillContainers(ctx, input, name, symbols);
  const sel = select(name, symbols);

  // Declarations past maxCandidates are not pinned (bounded work) but still counted as matches.
  const unpinned = Math.max(0, sel.chosen.filter((r) => r.symbol.external !== true).length - ctx.limits.maxCandidates);
  // The chosen declarations pinned to their definitions; undefined when none pinned.
  const fromSymbols = async (exact: boolean) => {
    const found = await pin(
      ctx,
      input,
      name,
      sel.chosen.map((r) => r.symbol),
      exact,
    );
    return found.length > 0 ? { ...finish(ctx, name, found, 'symbols', unpinned), ...(ws.truncated ? { partial: true } : {}) } : undefined;
  };
  if (sel.tier === 'exact') {
    const answer = await fromSymbols(true);
    if (answer) return answer;
  }
  const scan = await ctx.filesMentioning(input.root, name.leaf, name.qualifiers[0]);
  const files = scan.files;
  // Declared in a file whose server has no workspace symbols (a stylesheet's rule, mixin or variable)?
  const covered = new Set(symbols.flatMap((x) => languageOf(x.path)?.language ?? []));
  const outlined = await fromOutlines(ctx, input.root, name, input.encoding, files, covered, lacks);
  const fromOutline = async (exact: boolean): Promise<Resolution | undefined> => {
    const found = await pin(ctx, input, name, exact ? outlined.exact : outlined.loose, exact);
    return found.length > 0 ? withNotes(finish(ctx, name, found, 'symbols'), outlined) : undefined;
  };
  if (outlined.exact.length > 0) {
    const answer = await fromOutline(true);
    if (answer) return answer;
  }
  // Not declared in the tree under that name: find a use of it and ask the server.
  const used = await fromUseSites(ctx, input, name, files, lacks, outlined.declared);
  if (used.some((c) => c.exact)) return withNotes(finish(ctx, name, used, 'use-site'), outlined);
  if (sel.tier === 'loose') {
    const answer = await fromSymbols(false);
    if (answer) return answer;
  }
  if (outlined.loose.length > 0) {
    const answer = await fromOutline(false);
    if (answer) return answer;
  }
  if (used.length > 0) return withNotes(finish(ctx, name, used, 'use-site'), outlined);
  // No server could look (none has workspace symbols, no file could be outlined): the
  // refusal says why better than "not found" would, unless no file mentions the name at all.
  if (refused && !outlined.answered && !(scan.complete && files.length === 0)) throw refused;

  const near = sel.suggestions.map((x) => qualifiedOf(x, leafOf(x.name)));
  const hint = near.length > 0 ? ` Near names: ${near.slice(0, 5).join(', ')}.` : '';
  throw errors.notFoundSymbol(`No symbol named ${JSON.stringify(name.raw)} was found in this tree or its dependencies.${hint}`, {
    symbol: name.raw,
    suggestions: near,
  });
}

function withNotes(r: Resolution, o: Outlined): Resolution {
  return o.notes.length > 0 ? { ...r, notes: o.notes } : r;
}

const rootOf = (i: ResolveInput): RootKey => ({ org: i.root.org, repo: i.root.repo, sha: i.root.sha });

type Outcome<T> = { ok: true; value: T } | { ok: false; error: AppError };

// What one probe or candidate may fail with without failing the name: its file
// (gone, too large, not UTF-8), its language (no server, server down), or the
// position. Deadlines, not_ready, need_tree and busy concern the whole query.
const LOCAL = new Set(['no_such_file', 'file_too_large', 'not_utf8', 'no_server', 'server_unavailable', 'bad_request']);

async function soft<T>(p: Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    if (isAppError(err) && LOCAL.has(err.code)) return { ok: false, error: err };
    throw err;
  }
}

/** The candidates found; when none was and some attempt failed, that failure is the answer (not a 404). */
function settle(outcomes: Outcome<Candidate | undefined>[]): Candidate[] {
  const found = outcomes.flatMap((o) => (o.ok && o.value ? [o.value] : []));
  const failed = outcomes.find((o): o is { ok: false; error: AppError } => !o.ok);
  if (found.length === 0 && failed) throw failed.error;
  return found;
}

/** Servers that name no container (or only some) get it from the file's document symbols, when a qualifier needs it. */
async function fillContainers(ctx: AskContext, input: ResolveInput, name: ParsedName, symbols: Sym[]): Promise<void> {
  if (name.qualifiers.length === 0) return;
  const bare = symbols.filter((x) => x.container === undefined && leafOf(x.name) === name.leaf);
  const paths = [...new Set(bare.map((x) => x.path))].slice(0, ctx.limits.maxCandidates);
  await ctx.map(paths, async (path) => {
    // Best effort: a file the server cannot outline keeps its symbols as they came.
    const doc = await soft(ctx.lsp({ ...rootOf(input), op: 'documentSymbols', path, encoding: input.encoding }));
    if (!doc.ok) return;
    for (const x of bare.filter((b) => b.path === path)) {
      const host = enclosing((doc.value.symbols ?? []) as Sym[], x);
      if (host?.container) x.container = host.container;
    }
  });
}

/**
 * The document symbol that is `x`: same name, and its name range (selectionRange)
 * holds x's start; failing that, the innermost declaration range that does.
 */
function enclosing(docSymbols: Sym[], x: { name: string; range: Range }): Sym | undefined {
  const leaf = leafOf(x.name);
  const p = x.range.start;
  const named = docSymbols.filter((d) => leafOf(d.name) === leaf);
  const bySelection = named.find((d) => d.selectionRange !== undefined && contains(d.selectionRange as Range, p));
  if (bySelection) return bySelection;
  const holding = named.filter((d) => d.range !== undefined && contains(d.range, p));
  return holding.sort((a, b) => a.range.end.line - a.range.start.line - (b.range.end.line - b.range.start.line))[0];
}

function contains(r: Range, p: Pos): boolean {
  const after = p.line > r.start.line || (p.line === r.start.line && p.character >= r.start.character);
  const before = p.line < r.end.line || (p.line === r.end.line && p.character <= r.end.character);
  return after && before;
}

/** Ask definition at each chosen declaration's name: the server's own location, with preview and context. */
async function pin(ctx: AskContext, input: ResolveInput, name: ParsedName, chosen: Sym[], exact: boolean): Promise<Candidate[]> {
  // Declarations inside a dependency have no position in the tree to ask from; their uses do (step 3).
  const inTree = chosen.filter((x) => x.external !== true).slice(0, ctx.limits.maxCandidates);
  const found = await ctx.map(inTree, async (x): Promise<Outcome<Candidate | undefined>> => {
    const probe = await nameProbe(ctx, input, x, name.leaf);
    if (!probe) return { ok: true, value: undefined };
    const at = await soft(definitionsAt(ctx, input, probe));
    if (!at.ok) return at;
    const { locs: defs, other } = at.value;
    const own: Loc = { path: x.path, range: x.range, ...(await previewAt(ctx, input, x)) };
    const c: Candidate = {
      name: leafOf(x.name),
      kind: x.kind,
      ...(x.container !== undefined ? { container: x.container } : {}),
      qualified: qualifiedOf(x, name.leaf),
      probe,
      // A server that has no definition for a declaration's own name still told us where it is.
      definitions: defs.length > 0 ? defs : [own],
      other,
      exact,
    };
    return { ok: true, value: c };
  });
  return settle(found);
}

/** The preview line of a declaration the server gave no definition for (a CSS rule), as definitions carry one. */
async function previewAt(ctx: AskContext, input: ResolveInput, x: Sym): Promise<{ preview?: string }> {
  const line = splitLines((await ctx.readText(input.root, x.path)) ?? '')[x.range.start.line];
  return line === undefined ? {} : { preview: previewLine(line, toUtf16(line, x.range.start.character, input.encoding)) };
}

/** The position of the symbol's name at or after the start of its range (ranges may start at `export`). */
async function nameProbe(ctx: AskContext, input: ResolveInput, x: Sym, leaf: string): Promise<Probe | undefined> {
  const text = await ctx.readText(input.root, x.path);
  if (text === undefined) return undefined;
  const lines = splitLines(text);
  const line = lines[x.range.start.line];
  if (line === undefined) return undefined;
  const from = { line: x.range.start.line, character: toUtf16(line, x.range.start.character, input.encoding) };
  const at = findNameFrom(text, leaf, from) ?? from;
  return { path: x.path, line: at.line, character: fromUtf16(lines[at.line] ?? '', at.character, input.encoding) };
}

async function definitionsAt(ctx: AskContext, input: ResolveInput, p: Probe): Promise<{ locs: Loc[]; other: number }> {
  const a: LspAnswer = await ctx.lsp({
    ...rootOf(input),
    op: 'definition',
    path: p.path,
    line: p.line,
    character: p.character,
    encoding: input.encoding,
    context: input.context,
  });
  return { locs: (a.locations ?? []) as Loc[], other: typeof a.other === 'number' ? a.other : 0 };
}

/**
 * Use sites: the best probe positions of `files` (in order), definition at each
 * (bounded), kept when the definition fits the qualifiers: a probe written with
 * its qualifier (`dep.Greet`) fits as written; otherwise the target's chain must.
 */
/**
 * The languages whose servers can know the name: those of the files that mention its
 * leaf. Undefined (ask every server of the root) when the root has one language, when
 * the scan was cut by its bounds (absence proves nothing then), or when no file mentions
 * it (every server's near names are the best answer a misspelling gets). Asking only
 * these keeps a Python name on a polyglot monorepo from waking TypeScript, clangd and bash.
 */
async function languagesMentioning(ctx: AskContext, input: ResolveInput, name: ParsedName): Promise<Language[] | undefined> {
  if (ctx.languagesOf(input.root).length <= 1) return undefined;
  const scan = await ctx.filesMentioning(input.root, name.leaf, name.qualifiers[0]);
  if (!scan.complete || scan.files.length === 0) return undefined;
  const found = new Set<Language>();
  for (const f of scan.files) {
    const l = languageOf(f);
    if (l) found.add(l.language);
  }
  return found.size > 0 ? [...found].sort() : undefined;
}

async function fromUseSites(
  ctx: AskContext,
  input: ResolveInput,
  name: ParsedName,
  files: string[],
  lacks: LacksSymbols,
  declared: Outlined['declared'] = [],
): Promise<Candidate[]> {
  // Declarations found for a server that does not outline them are asked first.
  const probes: { probe: Probe; qualified: boolean; rank: number }[] = [];
  for (const d of declared.slice(0, ctx.limits.maxProbes)) {
    const line = splitLines((await ctx.readText(input.root, d.path)) ?? '')[d.line] ?? '';
    probes.push({ probe: { path: d.path, line: d.line, character: fromUtf16(line, d.character, input.encoding) }, qualified: false, rank: -1 });
  }
  for (const path of files) {
    if (probes.length >= ctx.limits.maxProbes * 2) break;
    const text = await ctx.readText(input.root, path);
    if (text === undefined || !text.includes(name.leaf)) continue;
    const lines = splitLines(text);
    for (const o of findOccurrences(text, name.leaf, name.qualifiers, ctx.limits.maxProbes)) {
      probes.push({ probe: { path, line: o.line, character: fromUtf16(lines[o.line]!, o.character, input.encoding) }, qualified: o.qualified, rank: o.rank });
    }
  }
  probes.sort((a, b) => a.rank - b.rank);
  const found = await ctx.map(probes.slice(0, ctx.limits.maxProbes), async ({ probe, qualified }): Promise<Outcome<Candidate | undefined>> => {
    const at = await soft(definitionsAt(ctx, input, probe));
    if (!at.ok) return at;
    const { locs: defs, other } = at.value;
    const none = { ok: true as const, value: undefined };
    if (defs.length === 0 && other === 0) return none;
    // Resolved, but outside the tree and its dependencies (a stdlib): only a use written
    // with its qualifier (`json.dumps`) or an unqualified name can vouch for it.
    if (defs.length === 0 && !qualified && name.qualifiers.length > 0) return none;
    const fit: Fit | 'none' = qualified || defs.length === 0 ? { fit: 'exact' } : await targetFit(ctx, input, name, defs[0]!, lacks);
    if (fit === 'none') return none;
    const d = defs[0];
    const sym: SymbolLike = d
      ? { name: name.leaf, path: d.path, external: d.external === true, module: d.module as string | undefined }
      : { name: name.leaf, path: undefined };
    if (fit.container !== undefined) sym.container = fit.container;
    const c: Candidate = {
      name: name.leaf,
      ...(fit.kind !== undefined ? { kind: fit.kind } : {}),
      ...(fit.container !== undefined ? { container: fit.container } : {}),
      qualified: d ? qualifiedOf(sym, name.leaf) : name.raw,
      probe,
      definitions: defs,
      other,
      exact: fit.fit === 'exact',
    };
    return { ok: true, value: c };
  });
  return settle(found);
}

interface Fit {
  fit: 'exact' | 'loose';
  container?: string;
  kind?: string | number;
}

/** Does a definition target fit the qualifiers? In the tree: by its document symbol's container; outside: by module. */
async function targetFit(ctx: AskContext, input: ResolveInput, name: ParsedName, d: Loc, lacks: LacksSymbols): Promise<Fit | 'none'> {
  let host: Sym | undefined;
  if (!d.external) {
    const doc = await soft(ctx.lsp({ ...rootOf(input), op: 'documentSymbols', path: d.path, encoding: input.encoding }));
    // A file the server cannot outline (too large, no server) cannot vouch for the target.
    if (!doc.ok) return 'none';
    host = enclosing((doc.value.symbols ?? []) as Sym[], { name: name.leaf, range: d.range });
    // In the tree, the target must be a declaration of that name: a probe inside a
    // module specifier (`'./a/parse.js'`) lands on a whole file, a renamed import on
    // another name; neither is the symbol asked for. A server that outlines less than
    // it declares (the CSS server: a custom property is no symbol to it) vouches by
    // landing on the name itself.
    if (!host && !(await landsOnName(ctx, input, name.leaf, d, lacks))) return 'none';
  }
  const sym: SymbolLike = { name: name.leaf, path: d.path, external: d.external === true, module: d.module as string | undefined, container: host?.container };
  const q = matchQualifiers(name.qualifiers, chainOf(sym));
  if (q.fit === 'none') return 'none';
  return { fit: q.fit, ...(host?.container !== undefined ? { container: host.container } : {}), ...(host?.kind !== undefined ? { kind: host.kind } : {}) };
}

/** The target's range is exactly the name, in a file whose server has no workspace symbols. */
async function landsOnName(ctx: AskContext, input: ResolveInput, leaf: string, d: Loc, lacks: LacksSymbols): Promise<boolean> {
  const language = languageOf(d.path)?.language;
  const { start, end } = d.range;
  if (language === undefined || start.line !== end.line || !(await lacks(language))) return false;
  const line = splitLines((await ctx.readText(input.root, d.path)) ?? '')[start.line] ?? '';
  return line.slice(toUtf16(line, start.character, input.encoding), toUtf16(line, end.character, input.encoding)) === leaf;
}

/** Module path, enclosing declarations, leaf: `src.server.Server.close`. */
function fullyQualified(d: Loc, container: string | undefined, leaf: string): string {
  const c = chainOf({ name: leaf, path: d.path, container, external: d.external === true, module: d.module as string | undefined });
  return [...c.module, ...c.container, leaf].join('.');
}

/** A name that picks this symbol alone: container-qualified, else module-qualified. */
function qualifiedOf(x: SymbolLike, leaf: string): string {
  const c = chainOf(x);
  if (c.container.length > 0) return [...c.container, leaf].join('.');
  return [...c.module, leaf].join('.');
}

function keyOf(l: Loc): string {
  const s = l.range?.start;
  return `${l.external ? `x:${String(l.module)}@${String(l.version)}:` : 't:'}${l.path}:${s?.line}:${s?.character}`;
}

/**
 * Candidates whose definitions overlap are one symbol (the same function reached
 * from two use sites, an overload and its implementation): union them, keep the
 * first of each group (exact ones first), count the groups.
 */
function finish(ctx: AskContext, name: ParsedName, found: Candidate[], via: Resolution['via'], unpinned = 0): Resolution {
  const anyExact = found.some((c) => c.exact);
  const pool = anyExact ? found.filter((c) => c.exact) : found;
  const groups: Candidate[] = [];
  const owner = new Map<string, Candidate>();
  for (const c of pool) {
    // Definitions all outside the tree and its dependencies: one key per name, so every use site of it is one match.
    const keys = c.definitions.length > 0 ? c.definitions.map(keyOf) : [`o:${name.raw}`];
    const into = keys.map((k) => owner.get(k)).find((g) => g !== undefined);
    if (into) {
      for (const d of c.definitions) if (!into.definitions.some((e) => keyOf(e) === keyOf(d))) into.definitions.push(d);
      into.other = Math.max(into.other, c.other);
    } else groups.push(c);
    for (const k of keys) if (!owner.has(k)) owner.set(k, into ?? c);
  }
  // Stable order for callers: in-tree before external, then by path and line.
  const first = (c: Candidate) => (c.definitions[0] ? keyOf(c.definitions[0]) : '~');
  groups.sort((a, b) => first(a).localeCompare(first(b)));
  // Two classes named Server each with a close: `Server.close` picks neither; the module path does.
  const counts = new Map<string, number>();
  for (const g of groups) counts.set(g.qualified, (counts.get(g.qualified) ?? 0) + 1);
  for (const g of groups) {
    const d = g.definitions[0];
    if ((counts.get(g.qualified) ?? 0) > 1 && d) g.qualified = fullyQualified(d, g.container, g.name);
  }
  return { name, matches: groups.length + unpinned, candidates: groups.slice(0, ctx.limits.maxCandidates), exact: anyExact, via };
}
