// Projection: turning a language server's raw results into API answers
// (API.md `POST /v1/code/lsp`; DESIGN.md "Bounds"). This file owns locations
// (definition, typeDefinition, implementation, references) and the answer-size cap;
// projection-text.ts owns hover, symbols and diagnostics; both are re-exported here.
//
// Pipeline for locations, and why each step is where it is:
// 1. Normalize: Location | Location[] | LocationLink[] | null; a LocationLink lands
//    on its targetSelectionRange (the name, what a caller wants). Malformed items
//    are counted in `other`: honest, never rendered.
// 2. Resolve coordinates (coordinates.ts). Only `tree` and `external` are rendered
//    and only their files are ever read; everything else is counted in `other`.
// 3. Dedupe identical (file, range) and sort by (tree first, module, version, path,
//    line, character): a deterministic order is what makes offset cursors exact on an
//    immutable root. Sorting uses server units: conversion is monotonic within a line.
// 4. `total` is every distinct renderable location; the page is [offset, offset +
//    min(limit, maxLocations)); `truncated` and `next_cursor` say there is more.
// 5. Read lines only for the page (previews, `context: N`, conversion), convert ranges
//    to the caller's encoding.
// capAnswer then keeps the serialized answer under maxAnswerBytes by dropping items
// from the end; for a locations page it also moves `next_cursor` back so the dropped
// locations are the next page's first, not lost.
import { decodeCursor, encodeCursor } from './cursor.js';
import { coordinateKey, createResolver, type CoordinateOptions, type ExternalCoordinate, type FileCoordinate } from './coordinates.js';
import { readOf, type ReadRef } from './file-read.js';
import { toUtf16Index, truncateUtf8, utf8Length, type Encoding } from '../wire/encoding.js';
import { LineReader, previewLine, type ReadLines } from './line-reader.js';
import { cleanRange, isLocation, isLocationLink, type Range } from '../wire/lsp-types.js';

export { projectDiagnostics, projectHover, projectSymbols } from './projection-text.js';
export type {
  DiagnosticsAnswer,
  HoverAnswer,
  HoverContext,
  SymbolsAnswer,
  SymbolsContext,
  DiagnosticsContext,
  RenderedSymbol,
  RenderedDiagnostic,
} from './projection-text.js';
export type { ReadLines } from './line-reader.js';

/** What every projection needs from its caller. */
export interface ProjectionContext {
  /** The caller's units for `character` (schemas.ts `encoding`). */
  encoding: Encoding;
  /** The units the server negotiated at initialize. */
  serverEncoding: Encoding;
  /** Reads lines of tree and external files (the caller does the I/O). */
  readLines: ReadLines;
  /** Reads an npm package's version from its directory in the jail. */
  readPackageVersion?: CoordinateOptions['readPackageVersion'];
  /** Reads a composer package's version from its vendor dir's installed.json. */
  readComposerVersion?: CoordinateOptions['readComposerVersion'];
  /** Finds the Python distribution (and version) owning a site-packages entry. */
  readPythonDist?: CoordinateOptions['readPythonDist'];
  /** The server toolchain's rust-src version, for std locations. */
  rustSrcVersion?: string;
  /** Where the files route reads an external file (file-read.ts readRefOf); absent: no `read`. */
  readRef?: (coord: ExternalCoordinate) => ReadRef | undefined;
}

export interface LocationsContext extends ProjectionContext {
  /** Most locations rendered in one answer (config maxLocations). */
  maxLocations: number;
  /** Lines of context before and after each location (0: none). */
  context?: number;
  /** Page size asked for; never more than maxLocations. */
  limit?: number;
  /** Cursor from a previous page. */
  cursor?: string;
  /** Group by file: `{groups: [{path, count, locations}]}`. */
  grouped?: boolean;
  /** Identity of the query (root, op, path, position, options); binds cursors to it. */
  cursorScope?: string;
}

export interface LineContext {
  before: string[];
  after: string[];
}

// What answers render are type aliases, not interfaces: only an alias is assignable
// to the answer schema's open objects (zod looseObject: an index signature).
export type TreeLocation = {
  path: string;
  range: Range;
  preview?: string;
  context?: LineContext;
};

export type ExternalLocation = {
  external: true;
  module: string;
  version: string;
  path: string;
  range: Range;
  /** Where GET .../files/{path} reads this file. */
  read?: ReadRef;
  preview?: string;
  context?: LineContext;
};

export type RenderedLocation = TreeLocation | ExternalLocation;

export interface LocationGroup {
  external?: true;
  module?: string;
  version?: string;
  path: string;
  /** Locations in this file across all pages (the page may show fewer). */
  count: number;
  locations: RenderedLocation[];
}

interface PageBase {
  /** Distinct renderable locations in all pages. */
  total: number;
  /** Locations not rendered: outside the tree and its dependencies, or malformed. */
  other: number;
  /** More locations exist than this answer shows (see next_cursor). */
  truncated: boolean;
  next_cursor?: string;
}
export interface LocationsPage extends PageBase {
  locations: RenderedLocation[];
}
export interface GroupedLocationsPage extends PageBase {
  groups: LocationGroup[];
}
export type LocationsAnswer = LocationsPage | GroupedLocationsPage;

/** Where a locations page starts and which query its cursors are bound to: what capAnswer needs to move `next_cursor` back. */
export interface PageState {
  offset: number;
  scope?: string;
}
/** A locations page, and beside it (never inside the answer) its paging state. */
export interface ProjectedLocations {
  answer: LocationsAnswer;
  page: PageState;
}

interface Item {
  coord: FileCoordinate;
  range: Range;
  key: string;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** Tree first, then module, version, path, position: the order every location list is in. */
export function compareItems(a: Pick<Item, 'coord' | 'range'>, b: Pick<Item, 'coord' | 'range'>): number {
  const ca = a.coord;
  const cb = b.coord;
  if (ca.kind !== cb.kind) return ca.kind === 'tree' ? -1 : 1;
  if (ca.kind === 'external' && cb.kind === 'external') {
    const d = cmp(ca.module, cb.module) || cmp(ca.version, cb.version);
    if (d) return d;
  }
  return (
    cmp(ca.path, cb.path) ||
    a.range.start.line - b.range.start.line ||
    a.range.start.character - b.range.start.character ||
    a.range.end.line - b.range.end.line ||
    a.range.end.character - b.range.end.character
  );
}

/** Raw definition/references result → [uri, range] pairs, and how many items were malformed. */
function normalize(raw: unknown): { pairs: [string, Range][]; malformed: number } {
  const list = raw === null || raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const pairs: [string, Range][] = [];
  let malformed = 0;
  for (const x of list) {
    if (isLocation(x)) pairs.push([x.uri, cleanRange(x.range)]);
    else if (isLocationLink(x)) pairs.push([x.targetUri, cleanRange(x.targetSelectionRange)]);
    else malformed++;
  }
  return { pairs, malformed };
}

export const rangeKey = (r: Range) => `${r.start.line}:${r.start.character}-${r.end.line}:${r.end.character}`;

/** Project a definition/typeDefinition/implementation/references result. */
export async function projectLocations(raw: unknown, ctx: LocationsContext): Promise<ProjectedLocations> {
  const { pairs, malformed } = normalize(raw);
  // The context carries the coordinate readers (CoordinateOptions).
  const resolve = createResolver(ctx);
  const coords = await Promise.all(pairs.map(([uri]) => resolve(uri)));
  const seen = new Set<string>();
  const items: Item[] = [];
  let other = malformed;
  for (let i = 0; i < pairs.length; i++) {
    const [uri, range] = pairs[i]!;
    const coord = coords[i]!;
    const key = coord.kind === 'other' ? `o:${uri}#${rangeKey(range)}` : `${coordinateKey(coord)}#${rangeKey(range)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (coord.kind === 'other') other++;
    else items.push({ coord, range, key: coordinateKey(coord) });
  }
  items.sort(compareItems);

  const total = items.length;
  const offset = ctx.cursor === undefined ? 0 : decodeCursor(ctx.cursor, total, ctx.cursorScope);
  const pageSize = Math.max(1, Math.min(ctx.limit ?? ctx.maxLocations, ctx.maxLocations));
  const page = items.slice(offset, offset + pageSize);
  const n = Math.max(0, Math.min(20, Math.floor(ctx.context ?? 0)));

  const reader = new LineReader(ctx.readLines);
  for (const it of page) {
    const s = it.range.start.line;
    for (let l = Math.max(0, s - n); l <= s + n; l++) reader.want(it.coord, l);
    reader.want(it.coord, it.range.end.line);
  }
  await reader.load();

  const locations = page.map((it) => renderLocation(it, reader, ctx, n));
  const more = offset + page.length < total;
  const base: PageBase = { total, other, truncated: more };
  if (more) base.next_cursor = encodeCursor(offset + page.length, ctx.cursorScope);
  let answer: LocationsAnswer;
  if (ctx.grouped) {
    const counts = new Map<string, number>();
    for (const it of items) counts.set(it.key, (counts.get(it.key) ?? 0) + 1);
    answer = { groups: groupLocations(page, locations, counts), ...base };
  } else answer = { locations, ...base };
  const paging: PageState = { offset };
  if (ctx.cursorScope !== undefined) paging.scope = ctx.cursorScope;
  return { answer, page: paging };
}

/** One location as answers show it; its lines (start, end, ±n) must be loaded in `reader`. */
export function renderLocation(it: Pick<Item, 'coord' | 'range'>, reader: LineReader, ctx: ProjectionContext, n = 0): RenderedLocation {
  const { coord } = it;
  const range = reader.convert(coord, it.range, ctx.serverEncoding, ctx.encoding);
  const out: RenderedLocation =
    coord.kind === 'tree'
      ? { path: coord.path, range }
      : { external: true, module: coord.module, version: coord.version, path: coord.path, range, ...readOf(coord, ctx) };
  const line = reader.line(coord, it.range.start.line);
  if (line !== undefined) out.preview = previewLine(line, toUtf16Index(line, it.range.start.character, ctx.serverEncoding));
  if (n > 0) {
    const before: string[] = [];
    const after: string[] = [];
    const s = it.range.start.line;
    for (let l = Math.max(0, s - n); l < s; l++) {
      const t = reader.line(coord, l);
      if (t !== undefined) before.push(previewLine(t));
    }
    for (let l = s + 1; l <= s + n; l++) {
      const t = reader.line(coord, l);
      if (t === undefined) break; // end of file
      after.push(previewLine(t));
    }
    out.context = { before, after };
  }
  return out;
}

/** Page items are sorted by file, so each file's locations are one run. */
function groupLocations(page: Item[], locations: RenderedLocation[], counts: Map<string, number>): LocationGroup[] {
  const groups: LocationGroup[] = [];
  let prev: string | undefined;
  for (let i = 0; i < page.length; i++) {
    const it = page[i]!;
    if (it.key !== prev) {
      const c = it.coord;
      const g: LocationGroup =
        c.kind === 'tree'
          ? { path: c.path, count: counts.get(it.key) ?? 0, locations: [] }
          : { external: true, module: c.module, version: c.version, path: c.path, count: counts.get(it.key) ?? 0, locations: [] };
      groups.push(g);
      prev = it.key;
    }
    groups[groups.length - 1]!.locations.push(locations[i]!);
  }
  return groups;
}

// `nodes` (call-graph.ts) are in breadth-first order: dropping from the end drops the deepest first.
// `actions` (code actions) are dropped whole: a patch cut short would apply wrongly.
const LIST_FIELDS = ['locations', 'symbols', 'diagnostics', 'nodes', 'actions'] as const;
const size = (v: unknown) => utf8Length(JSON.stringify(v));

/**
 * Make the serialized answer fit in maxAnswerBytes: drop locations, groups' locations,
 * symbols or diagnostics from the end (binary search on how many to keep), or cut
 * hover `contents` on a UTF-8 boundary, and mark `truncated`. `total` is left alone
 * (it stays honest). For a locations page (`page` given), `next_cursor` then points at
 * the first dropped location. Returns the answer itself when it already fits.
 */
export function capAnswer<T extends object>(answer: T, maxAnswerBytes: number, page?: PageState): T {
  return capAnswerJson(answer, maxAnswerBytes, page).answer;
}

/** capAnswer, with the JSON of what it returns (measuring an answer serializes it: the caller need not again). */
export function capAnswerJson<T extends object>(answer: T, maxAnswerBytes: number, page?: PageState): { answer: T; json: string } {
  const json = JSON.stringify(answer);
  // A UTF-16 unit is at most 3 UTF-8 bytes: most answers fit without counting.
  if (json.length * 3 <= maxAnswerBytes || utf8Length(json) <= maxAnswerBytes) return { answer, json };
  const cut = cutToFit(answer, maxAnswerBytes, page);
  return { answer: cut, json: cut === answer ? json : JSON.stringify(cut) };
}

function cutToFit<T extends object>(answer: T, maxAnswerBytes: number, page?: PageState): T {
  const a = answer as Record<string, unknown>;
  let build: ((k: number) => T) | undefined;
  let n = 0;
  const field = LIST_FIELDS.find((f) => Array.isArray(a[f]));
  const withCursor = (o: Record<string, unknown>, k: number) => {
    if (page) o.next_cursor = encodeCursor(page.offset + k, page.scope);
    return o as T;
  };
  if (field) {
    const list = a[field] as unknown[];
    n = list.length;
    build = (k) => withCursor({ ...a, [field]: list.slice(0, k), truncated: true }, k);
  } else if (Array.isArray(a.groups)) {
    const groups = a.groups as LocationGroup[];
    n = groups.reduce((s, g) => s + g.locations.length, 0);
    build = (k) => {
      const kept: LocationGroup[] = [];
      let left = k;
      for (const g of groups) {
        if (left <= 0) break;
        kept.push({ ...g, locations: g.locations.slice(0, left) });
        left -= g.locations.length;
      }
      return withCursor({ ...a, groups: kept, truncated: true }, k);
    };
  } else if (typeof a.contents === 'string') {
    const contents = a.contents;
    n = utf8Length(contents);
    build = (k) => ({ ...a, contents: truncateUtf8(contents, k), truncated: true }) as T;
  }
  if (!build) return answer;
  // largest k in [0, n] whose answer fits; k = 0 is returned even if it does not
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (size(build(mid)) <= maxAnswerBytes) lo = mid;
    else hi = mid - 1;
  }
  return build(lo);
}
