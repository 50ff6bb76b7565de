// Projection of hover, symbols and diagnostics (API.md `POST /v1/code/lsp`).
// Everything here is server-authored text or positions: text is scrubbed of host
// paths (scrub.ts) and bounded, ranges are converted to the caller's encoding, and
// symbols outside the tree and its dependencies are counted, never rendered.
//
// - Hover: MarkupContent, MarkedString and MarkedString[] all become one markdown
//   string; a `{language, value}` becomes a fenced block whose fence is longer than
//   any backtick run inside (so server text cannot close it early). Scrubbed, then
//   cut to maxHoverBytes on a UTF-8 boundary. Before scrubbing, text far past the cap
//   is dropped at a white-space boundary, which bounds the work without cutting a
//   path in a way that would let its start slip through.
// - Symbols: a DocumentSymbol tree is flattened in document order carrying its
//   container chain ("Outer.Inner"), which /ask uses to match qualified names. Depth
//   and node count are bounded (a server can nest arbitrarily). `range` is the whole
//   declaration, `selectionRange` the name (what to ask definition/references at).
//   Workspace symbols keep the server's order: it ranks by relevance.
// - Diagnostics: push (Diagnostic[]) and pull ({kind: 'full', items}) shapes; missing
//   severity reads as error (as VS Code does); sorted by position, stable.
import { createResolver, type Coordinate, type FileCoordinate } from './coordinates.js';
import { truncateUtf8 } from '../wire/encoding.js';
import { LineReader } from './line-reader.js';
import { SEVERITY_NAMES, cleanRange, isObject, isRange, symbolKindName, type Range, type SeverityName, type SymbolKindName } from '../wire/lsp-types.js';
import type { ProjectionContext } from './projection.js';
import { readOf, type ReadRef } from './file-read.js';
import type { Scrubber } from './scrub.js';

const MAX_SYMBOL_DEPTH = 64;
const MAX_SYMBOL_NODES = 100_000;
const MAX_NAME_BYTES = 1024;
const MAX_MESSAGE_BYTES = 8 * 1024;
const MAX_CODE_BYTES = 256;

export interface HoverContext extends ProjectionContext {
  /** The document the hover was asked in (its range is in this file). */
  document: FileCoordinate;
  maxHoverBytes: number;
  scrub: Scrubber;
}

export interface HoverAnswer {
  contents: string;
  range?: Range;
  truncated: boolean;
}

/** The longest run of backticks in s (for a fence that s cannot close). */
function longestBacktickRun(s: string): number {
  let best = 0;
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) === 96) best = Math.max(best, ++run);
    else run = 0;
  }
  return best;
}

function markedToMarkdown(m: unknown): string {
  if (typeof m === 'string') return m;
  if (!isObject(m) || typeof m.value !== 'string') return '';
  if (typeof m.kind === 'string') return m.value; // MarkupContent: markdown, or plaintext shown as is
  if (typeof m.language !== 'string') return '';
  const lang = m.language.replace(/[^A-Za-z0-9_+#.-]/g, '').slice(0, 32);
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(m.value) + 1));
  return `${fence}${lang}\n${m.value}\n${fence}`;
}

export async function projectHover(raw: unknown, ctx: HoverContext): Promise<HoverAnswer> {
  if (!isObject(raw)) return { contents: '', truncated: false };
  const c = raw.contents;
  const parts = Array.isArray(c) ? c.map(markedToMarkdown) : [markedToMarkdown(c)];
  let text = parts.filter((p) => p.trim() !== '').join('\n\n');
  let truncated = false;
  // bound the scrub's work; cut at white space so no path is split mid-way
  const precut = ctx.maxHoverBytes * 2 + 4096;
  if (text.length > precut) {
    let at = precut;
    while (at > precut - 4096 && !/\s/.test(text[at - 1]!)) at--;
    text = text.slice(0, at > precut - 4096 ? at : precut - 4096);
    truncated = true;
  }
  let contents = ctx.scrub(text);
  const cut = truncateUtf8(contents, ctx.maxHoverBytes);
  if (cut.length < contents.length) {
    contents = cut;
    truncated = true;
  }
  const out: HoverAnswer = { contents, truncated };
  if (isRange(raw.range)) {
    const r = cleanRange(raw.range);
    const reader = new LineReader(ctx.readLines);
    reader.wantRange(ctx.document, r);
    await reader.load();
    out.range = reader.convert(ctx.document, r, ctx.serverEncoding, ctx.encoding);
  }
  return out;
}

export interface SymbolsContext extends ProjectionContext {
  /** documentSymbols: the file asked about (DocumentSymbol carries no URI). */
  document?: FileCoordinate;
  /** Case-insensitive substring of the name (or of `container.name` when it holds a dot). */
  query?: string;
  maxLocations: number;
  scrub: Scrubber;
}

export type RenderedSymbol = {
  name: string;
  kind: SymbolKindName;
  path: string;
  external?: true;
  module?: string;
  version?: string;
  /** external: where GET .../files/{path} reads this file. */
  read?: ReadRef;
  /** The whole declaration; absent when a workspace symbol came without one. */
  range?: Range;
  /** The name inside it (DocumentSymbol only). */
  selectionRange?: Range;
  container?: string;
};

export interface SymbolsAnswer {
  symbols: RenderedSymbol[];
  total: number;
  other: number;
  truncated: boolean;
}

interface FlatSymbol {
  name: string;
  kind: SymbolKindName;
  container?: string;
  uri?: string; // absent: the context's document
  range?: Range;
  selectionRange?: Range;
}

/** DocumentSymbol trees → flat list in document order, containers joined with '.'. */
function flatten(raw: unknown[]): FlatSymbol[] {
  const out: FlatSymbol[] = [];
  const stack: { node: unknown; container: string | undefined; depth: number }[] = [];
  for (let i = raw.length - 1; i >= 0; i--) stack.push({ node: raw[i], container: undefined, depth: 0 });
  let visited = 0;
  while (stack.length > 0 && visited < MAX_SYMBOL_NODES) {
    const { node, container, depth } = stack.pop()!;
    visited++;
    if (!isObject(node) || typeof node.name !== 'string') continue;
    if (isObject(node.location) && typeof node.location.uri === 'string') {
      // SymbolInformation / WorkspaceSymbol
      const s: FlatSymbol = { name: node.name, kind: symbolKindName(node.kind), uri: node.location.uri };
      if (isRange(node.location.range)) s.range = cleanRange(node.location.range);
      if (typeof node.containerName === 'string' && node.containerName !== '') s.container = node.containerName;
      out.push(s);
      continue;
    }
    if (!isRange(node.range)) continue;
    const s: FlatSymbol = { name: node.name, kind: symbolKindName(node.kind), range: cleanRange(node.range) };
    if (isRange(node.selectionRange)) s.selectionRange = cleanRange(node.selectionRange);
    if (container !== undefined) s.container = container;
    out.push(s);
    if (Array.isArray(node.children) && depth + 1 < MAX_SYMBOL_DEPTH) {
      const inner = container === undefined ? node.name : `${container}.${node.name}`;
      for (let i = node.children.length - 1; i >= 0; i--) stack.push({ node: node.children[i], container: inner, depth: depth + 1 });
    }
  }
  return out;
}

function matches(s: FlatSymbol, q: string): boolean {
  if (s.name.toLowerCase().includes(q)) return true;
  return q.includes('.') && s.container !== undefined && `${s.container}.${s.name}`.toLowerCase().includes(q);
}

export async function projectSymbols(raw: unknown, ctx: SymbolsContext): Promise<SymbolsAnswer> {
  let flat = flatten(Array.isArray(raw) ? raw : []);
  const q = ctx.query?.toLowerCase();
  if (q) flat = flat.filter((s) => matches(s, q));
  const resolve = createResolver(ctx);
  const coords: Coordinate[] = await Promise.all(
    flat.map((s) => (s.uri === undefined ? (ctx.document ?? { kind: 'other' as const, reason: 'malformed' as const }) : resolve(s.uri))),
  );
  const kept: { s: FlatSymbol; coord: FileCoordinate }[] = [];
  let other = 0;
  flat.forEach((s, i) => {
    const coord = coords[i]!;
    if (coord.kind === 'other') other++;
    else kept.push({ s, coord });
  });
  const page = kept.slice(0, ctx.maxLocations);
  const reader = new LineReader(ctx.readLines);
  for (const { s, coord } of page) {
    if (s.range) reader.wantRange(coord, s.range);
    if (s.selectionRange) reader.wantRange(coord, s.selectionRange);
  }
  await reader.load();
  const symbols = page.map(({ s, coord }): RenderedSymbol => {
    const out: RenderedSymbol = { name: truncateUtf8(ctx.scrub(s.name), MAX_NAME_BYTES), kind: s.kind, path: coord.path };
    if (coord.kind === 'external') Object.assign(out, { external: true, module: coord.module, version: coord.version, ...readOf(coord, ctx) });
    if (s.range) out.range = reader.convert(coord, s.range, ctx.serverEncoding, ctx.encoding);
    if (s.selectionRange) out.selectionRange = reader.convert(coord, s.selectionRange, ctx.serverEncoding, ctx.encoding);
    if (s.container !== undefined) out.container = truncateUtf8(ctx.scrub(s.container), MAX_NAME_BYTES);
    return out;
  });
  return { symbols, total: kept.length, other, truncated: kept.length > page.length };
}

export interface DiagnosticsContext extends ProjectionContext {
  /** The file the diagnostics are about. */
  document: FileCoordinate;
  maxLocations: number;
  scrub: Scrubber;
}

export type RenderedDiagnostic = {
  range: Range;
  severity: SeverityName;
  code?: string | number;
  source?: string;
  message: string;
};

export interface DiagnosticsAnswer {
  diagnostics: RenderedDiagnostic[];
  total: number;
  truncated: boolean;
}

/** Accepts Diagnostic[] (publishDiagnostics) or a pull report ({kind: 'full', items}). */
export async function projectDiagnostics(raw: unknown, ctx: DiagnosticsContext): Promise<DiagnosticsAnswer> {
  const list: unknown[] = Array.isArray(raw) ? raw : isObject(raw) && Array.isArray(raw.items) ? raw.items : [];
  const valid = list
    .filter((d): d is Record<string, unknown> & { range: Range; message: string } => isObject(d) && isRange(d.range) && typeof d.message === 'string')
    .map((d) => ({ d, range: cleanRange(d.range) }));
  valid.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  const page = valid.slice(0, ctx.maxLocations);
  const reader = new LineReader(ctx.readLines);
  for (const { range } of page) reader.wantRange(ctx.document, range);
  await reader.load();
  const diagnostics = page.map(({ d, range }): RenderedDiagnostic => {
    const sev = typeof d.severity === 'number' && Number.isInteger(d.severity) ? SEVERITY_NAMES[d.severity] : undefined;
    const out: RenderedDiagnostic = {
      range: reader.convert(ctx.document, range, ctx.serverEncoding, ctx.encoding),
      severity: sev ?? 'error',
      message: truncateUtf8(ctx.scrub(d.message), MAX_MESSAGE_BYTES),
    };
    if (typeof d.code === 'number' && Number.isFinite(d.code)) out.code = d.code;
    else if (typeof d.code === 'string') out.code = truncateUtf8(ctx.scrub(d.code), MAX_CODE_BYTES);
    if (typeof d.source === 'string') out.source = truncateUtf8(ctx.scrub(d.source), MAX_CODE_BYTES);
    return out;
  });
  return { diagnostics, total: valid.length, truncated: valid.length > page.length };
}
