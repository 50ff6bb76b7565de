// `lspd diff`'s readable summary: what changed, what it may break, what it brings.
// Locations as `path:line:col` 1-based (print.ts's convention); the last line is the
// verdict a CI log is read for (new_errors counts every page, so any page gives it).
import type { DiffAnswer } from '../client/index.js';

type Range = { start: { line: number; character: number } };
const at = (path: string, r: Range | undefined) => (r ? `${path}:${r.start.line + 1}:${r.start.character + 1}` : path);

export function formatDiff(a: DiffAnswer, label: string): string {
  const out: string[] = [];
  const count = (c: string) => a.files.filter((f) => f.change === c).length;
  const tally = `${count('added')} added, ${count('modified')} modified, ${count('removed')} removed`;
  // A page of a long diff lists some of the files (or none: a later page holds symbols or impact only).
  out.push(
    a.files_total > a.files.length
      ? `${label}: ${a.files_total} files changed (${a.files.length} listed here: ${tally})`
      : `${label}: ${a.files_total} files changed (${tally})`,
  );
  for (const f of a.files) out.push(`  ${f.change.padEnd(8)} ${f.path}`);
  if (a.symbols.length) {
    out.push(`symbols (${a.symbols_total}):`);
    for (const s of a.symbols) {
      const where = s.change === 'added' ? s.head : s.base;
      const sig = s.change === 'changed' && s.signature_changed ? `  ${s.base?.signature ?? ''}  ->  ${s.head?.signature ?? ''}` : '';
      out.push(`  ${s.change.padEnd(8)} ${String(s.kind)} ${s.qualified}  ${at(s.path, where?.range)}${sig}`);
    }
  }
  if (a.total > 0) {
    out.push(`impact: ${a.total} references at base to removed or changed symbols${a.impact.length < a.total ? ` (${a.impact.length} shown)` : ''}:`);
    for (const l of a.impact) out.push(`  ${at(l.path, l.range)}  ${l.symbol}  ${String(l.preview ?? '').trim()}`.trimEnd());
  }
  if (a.diagnostics_total > 0) {
    out.push(`new diagnostics at head (${a.diagnostics_total}):`);
    for (const d of a.diagnostics) {
      const tag = [d.source, d.code].filter((x) => x !== undefined && x !== '').join(' ');
      out.push(`  ${at(d.path, d.range)}  ${String(d.severity ?? 'info')}: ${d.message}${tag ? ` [${tag}]` : ''}`);
    }
  }
  for (const n of a.notes ?? []) out.push(`-- ${n}`);
  if (a.next_cursor) out.push(`-- more: this is one page of the diff; the next with --cursor ${a.next_cursor}`);
  if (a.incomplete) out.push('-- incomplete: a server was still indexing; missing errors are not proof of none');
  out.push(a.new_errors > 0 ? `FAIL: ${a.new_errors} new error${a.new_errors === 1 ? '' : 's'} at head` : 'ok: no new errors at head');
  return out.join('\n');
}
