// Projection of call and type hierarchies (ops incomingCalls, outgoingCalls,
// supertypes, subtypes): the server's items from a prepare request are the roots,
// and each is expanded `depth` levels, one server request per node expanded.
//
// The answer is a flat list of nodes in breadth-first order, each naming its
// `parent` (an earlier node's `id`) and its `depth` (0 for what is at the position).
// Flat, not nested, so that the answer-size cap (capAnswer) can drop nodes from the
// end, the deepest first, and never orphan one.
//
// Bounds, and why they are these:
// - `maxNodes` (LSPD_MAX_CALL_NODES) rendered nodes, roots included. It also bounds
//   the server requests: only rendered nodes are expanded. When it stops the walk
//   before `depth`, the answer says `truncated`; `total` counts the nodes found.
// - A node whose item is one of its ancestors (recursion, mutual recursion) is
//   rendered with `cycle: true` and not expanded: the walk never loops.
// - A node seen twice elsewhere (a diamond) is rendered twice, but the server is
//   asked about it once.
// - Call sites: at most MAX_CALL_SITES per node, `call_sites_total` when more.
// Everything the server names goes through the same steps as every location:
// coordinates (tree path or `external` coordinate; anything else counted in `other`,
// never rendered or read), previews from the stored files, ranges in the caller's
// encoding, names and details scrubbed and bounded.
// LSP: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_prepareCallHierarchy
//      https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_prepareTypeHierarchy
import { coordinateKey, createResolver, type FileCoordinate } from './coordinates.js';
import { LineReader, previewLine } from './line-reader.js';
import { compareItems, rangeKey, renderLocation, type ProjectionContext, type RenderedLocation } from './projection.js';
import type { Scrubber } from './scrub.js';
import { toUtf16Index, truncateUtf8 } from '../wire/encoding.js';
import { cleanRange, isObject, isRange, symbolKindName, type Range, type SymbolKindName } from '../wire/lsp-types.js';

const MAX_CALL_SITES = 20;
const MAX_NAME_BYTES = 1024;
const MAX_DETAIL_BYTES = 256;

/**
 * How a server's expansion of one item reads: CallHierarchyIncomingCall[] (`from`,
 * its calls in the caller's file), CallHierarchyOutgoingCall[] (`to`, its calls in
 * the parent's file), or TypeHierarchyItem[].
 */
export type GraphShape = 'incoming' | 'outgoing' | 'types';

export interface GraphContext extends ProjectionContext {
  shape: GraphShape;
  /** Levels to expand below the roots (1-3). */
  depth: number;
  maxNodes: number;
  scrub: Scrubber;
  /** The server's expansion of one item it gave, sent back as it came (`data` and all). */
  expand(item: unknown): Promise<unknown>;
}

export type GraphNode = {
  /** Its index in `nodes`. */
  id: number;
  /** The node this one is a caller, callee, supertype or subtype of; absent for a root. */
  parent?: number;
  depth: number;
  name: string;
  kind: SymbolKindName;
  detail?: string;
  path: string;
  external?: true;
  module?: string;
  version?: string;
  /** The whole declaration. */
  range: Range;
  /** Its name. */
  selectionRange: Range;
  preview?: string;
  /** The calls joining it to its parent: in its own file (incoming) or in the parent's (outgoing). */
  call_sites?: RenderedLocation[];
  call_sites_total?: number;
  /** It is one of its own ancestors: not expanded again. */
  cycle?: true;
};

export interface GraphAnswer {
  nodes: GraphNode[];
  /** Nodes found (rendered or not) over the levels walked. */
  total: number;
  /** Items outside the tree and its dependencies, or malformed: counted, never rendered. */
  other: number;
  /** The node budget stopped the walk before `depth`: more nodes may exist. */
  truncated: boolean;
}

interface Item {
  raw: Record<string, unknown>;
  name: string;
  kind: SymbolKindName;
  detail?: string;
  uri: string;
  range: Range;
  selectionRange: Range;
}

interface Site {
  coord: FileCoordinate;
  range: Range;
}

interface Node {
  item: Item;
  coord: FileCoordinate;
  /** Identity for cycles and the expansion memo: file and name range. */
  key: string;
  depth: number;
  parent?: number;
  sites: Site[];
  cycle: boolean;
}

function parseItem(x: unknown): Item | undefined {
  if (!isObject(x) || typeof x.name !== 'string' || typeof x.uri !== 'string' || !isRange(x.range)) return undefined;
  const range = cleanRange(x.range);
  const item: Item = {
    raw: x,
    name: x.name,
    kind: symbolKindName(x.kind),
    uri: x.uri,
    range,
    selectionRange: isRange(x.selectionRange) ? cleanRange(x.selectionRange) : range,
  };
  if (typeof x.detail === 'string' && x.detail !== '') item.detail = x.detail;
  return item;
}

/** One expansion (or a prepare answer, shape 'types') → items with their raw call ranges; malformed entries counted. */
function parseChildren(raw: unknown, shape: GraphShape): { kids: { item: Item; ranges: Range[] }[]; malformed: number } {
  const list = Array.isArray(raw) ? raw : [];
  const kids: { item: Item; ranges: Range[] }[] = [];
  let malformed = 0;
  for (const x of list) {
    const item = parseItem(shape === 'types' ? x : isObject(x) ? (shape === 'incoming' ? x.from : x.to) : undefined);
    if (!item) {
      malformed++;
      continue;
    }
    const from = shape !== 'types' && isObject(x) && Array.isArray(x.fromRanges) ? x.fromRanges : [];
    kids.push({ item, ranges: from.filter(isRange).map(cleanRange) });
  }
  return { kids, malformed };
}

/** Build the graph from a prepare answer (CallHierarchyItem[] or TypeHierarchyItem[]). */
export async function projectGraph(prepared: unknown, ctx: GraphContext): Promise<GraphAnswer> {
  const resolve = createResolver(ctx);
  const nodes: Node[] = [];
  let total = 0;
  let other = 0;
  let truncated = false;

  /** Resolve, drop what is not rendered, merge duplicates, sort: the children of one node (or the roots). */
  const place = async (raw: unknown, shape: GraphShape, parent: Node | undefined) => {
    const { kids, malformed } = parseChildren(raw, shape);
    other += malformed;
    const coords = await Promise.all(kids.map((k) => resolve(k.item.uri)));
    const byKey = new Map<string, Omit<Node, 'depth' | 'cycle'>>();
    kids.forEach(({ item, ranges }, i) => {
      const coord = coords[i]!;
      if (coord.kind === 'other') {
        other++;
        return;
      }
      const key = `${coordinateKey(coord)}#${rangeKey(item.selectionRange)}`;
      // Incoming: the calls are in the caller (this item); outgoing: in the parent's body.
      const siteCoord = shape === 'outgoing' && parent ? parent.coord : coord;
      const sites = ranges.map((range) => ({ coord: siteCoord, range }));
      const seen = byKey.get(key);
      if (seen) seen.sites.push(...sites);
      else byKey.set(key, { item, coord, key, sites });
    });
    return [...byKey.values()].sort((a, b) => compareItems({ coord: a.coord, range: a.item.selectionRange }, { coord: b.coord, range: b.item.selectionRange }));
  };
  const isAncestor = (key: string, from: number | undefined): boolean => {
    for (let i = from; i !== undefined; i = nodes[i]!.parent) if (nodes[i]!.key === key) return true;
    return false;
  };
  const add = (n: Omit<Node, 'depth' | 'cycle'>, depth: number, parent: number | undefined): number | undefined => {
    total++;
    if (nodes.length >= ctx.maxNodes) {
      truncated = true;
      return undefined;
    }
    const node: Node = { ...n, depth, cycle: isAncestor(n.key, parent) };
    if (parent !== undefined) node.parent = parent;
    return nodes.push(node) - 1;
  };

  let frontier: number[] = [];
  for (const r of await place(prepared, 'types', undefined)) {
    const i = add(r, 0, undefined);
    if (i !== undefined) frontier.push(i);
  }
  const memo = new Map<string, Promise<unknown>>();
  for (let level = 1; level <= ctx.depth && frontier.length > 0; level++) {
    const next: number[] = [];
    for (const p of frontier) {
      const parent = nodes[p]!;
      if (parent.cycle) continue;
      if (nodes.length >= ctx.maxNodes) {
        truncated = true;
        break;
      }
      let raw = memo.get(parent.key);
      if (!raw) memo.set(parent.key, (raw = ctx.expand(parent.item.raw)));
      for (const kid of await place(await raw, ctx.shape, parent)) {
        const i = add(kid, level, p);
        if (i !== undefined) next.push(i);
      }
    }
    if (truncated) break;
    frontier = next;
  }
  return { nodes: await render(nodes, ctx), total, other, truncated };
}

async function render(nodes: Node[], ctx: GraphContext): Promise<GraphNode[]> {
  const reader = new LineReader(ctx.readLines);
  /** A node's call sites, each once, in file order (a server may list one twice, or merge two entries). */
  const sitesOf = (n: Node) => [...new Map(n.sites.map((s) => [rangeKey(s.range), s])).values()].sort(compareItems);
  const shown = nodes.map((n) => {
    const sites = sitesOf(n);
    return { n, sites, page: sites.slice(0, MAX_CALL_SITES) };
  });
  for (const { n, page } of shown) {
    reader.wantRange(n.coord, n.item.range);
    reader.wantRange(n.coord, n.item.selectionRange);
    for (const s of page) reader.wantRange(s.coord, s.range);
  }
  await reader.load();
  const text = (t: string, max: number) => truncateUtf8(ctx.scrub(t), max);
  return shown.map(({ n, sites, page }, id) => {
    const { coord, item } = n;
    const out: GraphNode = {
      id,
      ...(n.parent !== undefined ? { parent: n.parent } : {}),
      depth: n.depth,
      name: text(item.name, MAX_NAME_BYTES),
      kind: item.kind,
      path: coord.path,
      ...(coord.kind === 'external' ? { external: true as const, module: coord.module, version: coord.version } : {}),
      range: reader.convert(coord, item.range, ctx.serverEncoding, ctx.encoding),
      selectionRange: reader.convert(coord, item.selectionRange, ctx.serverEncoding, ctx.encoding),
    };
    const line = reader.line(coord, item.selectionRange.start.line);
    if (line !== undefined) out.preview = previewLine(line, toUtf16Index(line, item.selectionRange.start.character, ctx.serverEncoding));
    if (item.detail !== undefined) out.detail = text(item.detail, MAX_DETAIL_BYTES);
    if (ctx.shape !== 'types' && n.depth > 0) {
      out.call_sites = page.map((s) => renderLocation(s, reader, ctx));
      if (sites.length > page.length) out.call_sites_total = sites.length;
    }
    if (n.cycle) out.cycle = true;
    return out;
  });
}
