// Readable output for the CLI: one location per line as `path:line:col  preview`
// with 1-based line and column, the convention compilers and grep use, so editors
// and terminals make them clickable. (The API itself is zero-based, as LSP is.)
import type { LspAnswer, ReadyAnswer, RootAnswer } from '../client/index.js';

type Range = { start: { line: number; character: number } };

const at = (path: string, r: Range | undefined) => (r ? `${path}:${r.start.line + 1}:${r.start.character + 1}` : path);

export function formatAnswer(a: LspAnswer): string {
  const lines: string[] = [];
  for (const l of a.locations ?? []) {
    const where = l.external ? `${l.module ?? 'dependency'}${l.version ? '@' + l.version : ''}/${l.path}` : l.path;
    lines.push(`${at(where, l.range)}  ${(l.preview ?? '').trim()}`.trimEnd());
    // What to paste to read it: `lspd show` takes 1-based lines, as printed.
    if (l.external && l.read)
      lines.push(`  read: lspd show${l.read.from === 'deps' ? ' --from deps' : ''} ${l.read.path}:${l.range.start.line + 1}-${l.range.start.line + 21}`);
  }
  if (typeof a.contents === 'string' && a.contents.trim() !== '') lines.push(a.contents.trimEnd());
  for (const s of a.symbols ?? []) {
    lines.push(`${at(s.path ?? '', s.range)}  ${String(s.kind)} ${s.container ? s.container + '.' : ''}${s.name}`);
  }
  // A call or type hierarchy: breadth-first nodes shown as a tree, each under its parent.
  const kids = new Map<number | undefined, NonNullable<LspAnswer['nodes']>>();
  for (const n of a.nodes ?? []) kids.set(n.parent, [...(kids.get(n.parent) ?? []), n]);
  const tree = (parent: number | undefined) => {
    for (const n of kids.get(parent) ?? []) {
      const where = n.external ? `${n.module ?? 'dependency'}${n.version ? '@' + n.version : ''}/${n.path}` : n.path;
      lines.push(`${'  '.repeat(n.depth)}${at(where, n.selectionRange)}  ${n.kind} ${n.name}${n.cycle ? ' (cycle)' : ''}`);
      if (!n.cycle) tree(n.id);
    }
  };
  tree(undefined);
  for (const d of a.diagnostics ?? []) {
    const tag = [d.source, d.code].filter((x) => x !== undefined && x !== '').join(' ');
    lines.push(`${at('', d.range).replace(/^:/, '')}  ${String(d.severity ?? 'info')}: ${d.message}${tag ? ` [${tag}]` : ''}`);
  }
  // Edits: a rename's patch as is (pipe `lspd rename` to git apply), code actions numbered with theirs.
  if (typeof a.patch === 'string') lines.push(a.patch.trimEnd());
  (a.actions ?? []).forEach((x, i) => {
    const fixes = (x.fixes ?? []).map((f) => `${f.range.start.line + 1}:${f.range.start.character + 1} ${f.message}`);
    lines.push(`${i + 1}. [${x.kind || 'no kind'}] ${x.title}${fixes.length ? `  (fixes ${fixes.join('; ')})` : ''}`);
    lines.push(x.patch ? x.patch.trimEnd() : `   no patch: ${x.patch_unavailable ?? 'none given'}`);
  });
  const shown = a.locations?.length ?? 0;
  const notes: string[] = [];
  if (a.locations && a.total !== undefined && a.total !== shown) notes.push(`${shown} of ${a.total} shown`);
  if (a.nodes && a.total !== undefined && a.total !== a.nodes.length) notes.push(`${a.nodes.length} of ${a.total} nodes shown`);
  if (a.actions && a.total !== undefined && a.total !== a.actions.length) notes.push(`${a.actions.length} of ${a.total} actions shown`);
  if (a.truncated) notes.push('truncated' + (a.next_cursor ? ` (more with --cursor ${a.next_cursor})` : ''));
  if (a.other) notes.push(`${a.other} outside the tree and its dependencies`);
  if (a.matches !== undefined && a.matches > 1) notes.push(`${a.matches} symbols match this name`);
  if (a.incomplete) notes.push('incomplete: the server was still indexing');
  if (lines.length === 0) lines.push('(nothing found)');
  if (notes.length) lines.push(`-- ${notes.join('; ')}`);
  return lines.join('\n');
}

const verdict = (v: { ok: boolean; reason?: string | undefined }) => (v.ok ? 'ok' : `NOT OK: ${v.reason ?? 'not proved'}`);

export function formatReady(r: ReadyAnswer): string {
  const out = [`ready: ${r.ready ? 'yes' : `no (${r.reason ?? 'unknown'})`}`];
  out.push(`jail:  serve ${verdict(r.jail.serve)}; fetch ${verdict(r.jail.fetch)}`);
  if (r.store) out.push(`store: ${verdict(r.store)}`);
  const servers = Object.entries(r.servers ?? {});
  if (servers.length) {
    out.push('servers:');
    const w = Math.max(...servers.map(([n]) => n.length));
    for (const [name, s] of servers) {
      out.push(
        `  ${name.padEnd(w)}  ${s.available ? 'available' : 'unavailable'}${s.version ? ' ' + s.version : ''}${!s.available && s.reason ? ` (${s.reason})` : ''}`,
      );
    }
  }
  return out.join('\n');
}

export function humanBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function formatRoot(r: RootAnswer): string {
  const k = r.root;
  const sessions = (r.sessions ?? []).map((s) => `${s.server}:${s.state}`).join(',') || 'none';
  return `  ${k.org}/${k.repo}@${k.sha.slice(0, 12)}  ${r.files} files  ${humanBytes(r.bytes)}  [${r.languages.join(',')}]  fetch ${r.fetch.state}  sessions ${sessions}`;
}
