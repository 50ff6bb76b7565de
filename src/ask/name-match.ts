// Pure name matching for /ask: parse a plain or qualified name (`Greet`,
// `dep.Greet`, `Server.close`, `pkg.mod.func`, `Foo::bar`, `example.com/dep.Greet`)
// and rank the symbols a language server returned against it by their container
// chain (module path + enclosing declarations). No I/O here, so every rule about
// what counts as "the same name" is unit-tested in name-match.test.ts.
//
// The rules, in order of strength:
// - exact: the leaf name is equal (case-sensitive) and the qualifiers are a suffix
//   of the candidate's chain (`Server.close` ↔ chain [src, server, Server]).
// - loose: case-insensitive name, or qualifiers found in order but not as a suffix
//   (`pkg.func` ↔ [src, pkg, mod]). Answered, but the answer says `exact: false`.
// - fuzzy: the leaf is a prefix/substring. Never answered (that would be a guess);
//   offered as suggestions in the 404.
// A qualifier satisfied by an enclosing declaration beats one satisfied only by the
// file path: `Server.close` is the method of class Server, not a free function
// `close` that happens to live in Server.ts.
import { errors } from '../errors.js';

export interface ParsedName {
  /** The name as given, trimmed. */
  raw: string;
  /** The last segment: what the language server calls the symbol. */
  leaf: string;
  /** Enclosing segments, outermost first (`pkg.mod.func` → [pkg, mod]). */
  qualifiers: string[];
}

/** A symbol as the query service renders it (API.md `symbols`), plus an optional dependency coordinate. */
export interface SymbolLike {
  name: string;
  kind?: string | number;
  path?: string;
  container?: string;
  external?: boolean;
  module?: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
}

export type Tier = 'exact' | 'loose' | 'fuzzy';
export type Via = 'container' | 'module' | 'none';

export interface Ranked<S extends SymbolLike> {
  symbol: S;
  tier: Tier;
  /** What satisfied the qualifiers: an enclosing declaration, only the module path, or nothing was asked. */
  via: Via;
}

const MAX_SEGMENTS = 16;

/**
 * Parse `symbol` into a leaf and its qualifiers. Separators: `.`, `::`, `#`, `->`,
 * `\` (PHP namespaces); a `/` marks an import path whose last segment is the
 * package (`example.com/dep.Greet` → [dep], Greet). A trailing `()` is dropped, and a
 * leading `.` or `#` (a CSS class or id: `.button` → button).
 * Throws 400 bad_request on a name with no usable leaf.
 */
export function parseSymbolName(symbol: string): ParsedName {
  const raw = symbol.trim();
  let s = raw.replace(/\(\s*\)$/, '').replace(/::|->|#|\\/g, '.');
  // A class or id selector (`.button`, `#main`) names the class or id: outline.ts matches its rules.
  if (/^\.[^.]/.test(s)) s = s.slice(1);
  const slash = s.lastIndexOf('/');
  if (slash >= 0) s = s.slice(slash + 1);
  const parts = s.split('.').map((p) => p.trim());
  if (raw === '' || /\s/.test(s) || parts.some((p) => p === '') || parts.length > MAX_SEGMENTS) {
    throw errors.badRequest(`symbol ${JSON.stringify(raw)} is not a name: give Name or Container.Name (at most ${MAX_SEGMENTS} segments).`);
  }
  const leaf = parts[parts.length - 1]!;
  return { raw, leaf, qualifiers: parts.slice(0, -1) };
}

/** Split a server-rendered name or container (`(*Server).Close`, `A::B`, `a.b`) into plain segments. */
export function splitQualified(s: string | undefined): string[] {
  if (!s) return [];
  return s
    .replace(/[()*&]/g, '')
    .replace(/::|->|#|\\/g, '.')
    .split('.')
    .map((p) => p.trim())
    .filter(Boolean);
}

/**
 * A file's module chain: its path without suffix, `/`-split, with the package
 * entry files (`index`, `__init__`, Rust's `mod.rs`/`lib.rs`) standing for their directory.
 * `pkg/mod.py` → [pkg, mod]; `src/util/index.ts` → [src, util].
 */
export function moduleChain(path: string | undefined): string[] {
  if (!path) return [];
  const segs = path.split('/').filter(Boolean);
  const last = segs.pop();
  if (last === undefined) return [];
  // `.d.ts` and friends carry two dots; the module name is the part before the first.
  const stem = last.startsWith('.') ? last : last.split('.')[0]!;
  const entries = last.endsWith('.rs') ? ['mod', 'lib', 'main'] : ['index', '__init__', '__main__'];
  if (!entries.includes(stem)) segs.push(stem);
  return segs;
}

/** The candidate's chain, outermost first: module segments, then enclosing declarations. */
export function chainOf(sym: SymbolLike): { module: string[]; container: string[] } {
  const nameParts = splitQualified(sym.name);
  const container = [...splitQualified(sym.container), ...nameParts.slice(0, -1)];
  const module = sym.external && sym.module ? [...sym.module.split(/[/.]/).filter(Boolean), ...moduleChain(sym.path)] : moduleChain(sym.path);
  return { module, container };
}

/** The symbol's own leaf name, stripped of any qualification a server put in it, and of a call signature. */
export function leafOf(name: string): string {
  const parts = splitQualified(name.replace(/\(.*\)\s*$/, ''));
  return parts[parts.length - 1] ?? name;
}

function isSuffix(q: string[], chain: string[], eq: (a: string, b: string) => boolean): boolean {
  if (q.length > chain.length) return false;
  const off = chain.length - q.length;
  return q.every((x, i) => eq(x, chain[off + i]!));
}

function isSubsequence(q: string[], chain: string[], eq: (a: string, b: string) => boolean): boolean {
  let i = 0;
  for (const c of chain) if (i < q.length && eq(q[i]!, c)) i++;
  return i === q.length;
}

const cs = (a: string, b: string) => a === b;
const ci = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * How well the qualifiers fit a chain: exact (a suffix), loose (in order, or only
 * case-insensitively), or not at all; and whether an enclosing declaration took part.
 */
export function matchQualifiers(q: string[], chain: { module: string[]; container: string[] }): { fit: 'exact' | 'loose' | 'none'; via: Via } {
  if (q.length === 0) return { fit: 'exact', via: 'none' };
  const full = [...chain.module, ...chain.container];
  // Via container: the innermost qualifier names the enclosing declaration.
  const inner = chain.container[chain.container.length - 1];
  const viaContainer = inner !== undefined && ci(q[q.length - 1]!, inner);
  const via: Via = viaContainer ? 'container' : 'module';
  if (isSuffix(q, full, cs)) return { fit: 'exact', via };
  if (isSuffix(q, full, ci) || isSubsequence(q, full, ci)) return { fit: 'loose', via };
  return { fit: 'none', via: 'none' };
}

/** Name fit alone: exact, case-insensitive (loose), prefix/substring (fuzzy), or none. */
export function matchLeaf(leaf: string, name: string): Tier | 'none' {
  const l = leafOf(name);
  if (l === leaf) return 'exact';
  if (ci(l, leaf)) return 'loose';
  const a = l.toLowerCase();
  const b = leaf.toLowerCase();
  if (b.length >= 2 && (a.startsWith(b) || a.includes(b) || b.includes(a))) return 'fuzzy';
  return 'none';
}

/** Rank one symbol against a parsed name, or undefined if it does not match at all. */
export function rank<S extends SymbolLike>(name: ParsedName, sym: S): Ranked<S> | undefined {
  const leafFit = matchLeaf(name.leaf, sym.name);
  if (leafFit === 'none') return undefined;
  const qual = matchQualifiers(name.qualifiers, chainOf(sym));
  if (qual.fit === 'none') {
    // A fuzzy leaf with unmatched qualifiers is still worth suggesting; anything better is not a match.
    return leafFit === 'fuzzy' ? { symbol: sym, tier: 'fuzzy', via: 'none' } : undefined;
  }
  const tier: Tier = leafFit === 'fuzzy' ? 'fuzzy' : leafFit === 'exact' && qual.fit === 'exact' ? 'exact' : 'loose';
  return { symbol: sym, tier, via: qual.via };
}

export interface Selection<S extends SymbolLike> {
  /** The candidates to answer with (all of one tier and one strength), deduplicated. */
  chosen: Ranked<S>[];
  /** exact | loose, or undefined when nothing can be answered. */
  tier: 'exact' | 'loose' | undefined;
  /** Near names to offer in a not-found answer. */
  suggestions: S[];
}

/**
 * Pick what to answer with: the exact tier if any, else the loose tier; within it,
 * container matches beat module-only matches. Overloads (same file, same chain,
 * same leaf) collapse to one candidate, the first declaration.
 */
export function select<S extends SymbolLike>(name: ParsedName, symbols: readonly S[], maxSuggestions = 10): Selection<S> {
  const ranked = symbols.map((s) => rank(name, s)).filter((r): r is Ranked<S> => r !== undefined);
  const suggestions = dedupe(ranked.filter((r) => r.tier === 'fuzzy'))
    .slice(0, maxSuggestions)
    .map((r) => r.symbol);
  for (const tier of ['exact', 'loose'] as const) {
    const inTier = ranked.filter((r) => r.tier === tier);
    if (inTier.length === 0) continue;
    const byContainer = inTier.filter((r) => r.via === 'container');
    const chosen = dedupe(byContainer.length > 0 ? byContainer : inTier);
    return { chosen, tier, suggestions };
  }
  return { chosen: [], tier: undefined, suggestions };
}

/** Overload key: where it lives, what encloses it, what it is called. */
export function overloadKey(sym: SymbolLike): string {
  const c = chainOf(sym);
  const where = sym.external ? `ext:${sym.module ?? ''}:${sym.path ?? ''}` : `tree:${sym.path ?? ''}`;
  return `${where}|${c.container.join('.')}|${leafOf(sym.name)}`;
}

function dedupe<S extends SymbolLike>(rs: Ranked<S>[]): Ranked<S>[] {
  const seen = new Set<string>();
  return rs.filter((r) => {
    const k = overloadKey(r.symbol);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
