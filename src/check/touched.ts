// Which top-level declarations of a file a patch changes, so a check asks the
// references of those only (files using the file's other declarations cannot see a
// difference). Pure: check-service.ts feeds it the stored and patched texts and the
// stored file's top-level document symbols (ranges in UTF-16 units, as JS strings).
// Each changed region (a line diff's block, narrowed to the characters that differ)
// must lie inside a declaration's range, an insertion strictly inside; a region
// that is blank on both sides is no change. Anything else (an import, `export {…}`,
// a top-level statement, `export` taken off, a comment or decorator outside the
// symbol's range, a symbol without a range) counts every declaration as changed.
// What a changed declaration changes in its own file is followed by the caller:
// the declarations holding its references there change with it.
import { baseLineEdits } from '../diff/symbol-diff.js';
import type { Position, Range } from '../lsp/wire/lsp-types.js';

export interface Declaration {
  range?: Range;
}

const blank = (s: string) => s.trim() === '';
const atOrBefore = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.character <= b.character);
const strictlyBefore = (a: Position, b: Position) => a.line < b.line || (a.line === b.line && a.character < b.character);

/** Indices of `decls` the change from `old` to `text` touches, or 'all'. */
export function touchedDeclarations(old: string, text: string, decls: readonly Declaration[]): Set<number> | 'all' {
  if (decls.some((d) => !d.range)) return 'all';
  const out = new Set<number>();
  for (const r of changedRegions(old, text)) {
    const inside = decls.flatMap((d, i) => {
      const { start, end } = d.range!;
      const holds = r.empty ? strictlyBefore(start, r.from) && strictlyBefore(r.from, end) : atOrBefore(start, r.from) && atOrBefore(r.to, end);
      return holds ? [i] : [];
    });
    if (inside.length === 0) return 'all';
    for (const i of inside) out.add(i);
  }
  return out;
}

/** The old text's regions a change rewrites (from..to in old positions; empty: an insertion at from), blank ones left out. */
export function changedRegions(old: string, text: string): { from: Position; to: Position; empty: boolean }[] {
  const lines = old.split('\n');
  const { changed, inserted } = baseLineEdits(old, text);
  // Blocks of old lines [from, to] (to = from - 1: none) with what head puts in their place.
  const blocks: { from: number; to: number }[] = [];
  for (const l of [...changed].sort((a, b) => a - b)) {
    const last = blocks.at(-1);
    if (last && last.to === l - 1) last.to = l;
    else blocks.push({ from: l, to: l });
  }
  for (const k of inserted.keys()) if (!blocks.some((b) => b.from <= k && k <= b.to + 1)) blocks.push({ from: k, to: k - 1 });
  const out: { from: Position; to: Position; empty: boolean }[] = [];
  for (const b of blocks) {
    const was = lines.slice(b.from, b.to + 1).join('\n');
    const now: string[] = [];
    for (let k = b.from; k <= b.to + 1; k++) now.push(...(inserted.get(k) ?? []));
    const is = now.join('\n');
    let p = 0;
    while (p < was.length && p < is.length && was[p] === is[p]) p++;
    let s = 0;
    while (s < was.length - p && s < is.length - p && was[was.length - 1 - s] === is[is.length - 1 - s]) s++;
    if (blank(was.slice(p, was.length - s)) && blank(is.slice(p, is.length - s))) continue;
    const at = (offset: number): Position => {
      const before = was.slice(0, offset);
      const nl = before.lastIndexOf('\n');
      return { line: b.from + before.split('\n').length - 1, character: offset - (nl + 1) };
    };
    out.push({ from: at(p), to: at(was.length - s), empty: p === was.length - s });
  }
  return out;
}

/** The declaration whose range holds position `p`, if any. */
export function declarationHolding(decls: readonly Declaration[], p: Position): number | undefined {
  const i = decls.findIndex((d) => d.range && atOrBefore(d.range.start, p) && atOrBefore(p, d.range.end));
  return i < 0 ? undefined : i;
}
