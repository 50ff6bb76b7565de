// A server's WorkspaceEdit (a rename's answer) rendered as lspd answers edits: one
// unified diff of the tree (`patch`, for `git apply`) and the same edits per file in
// the caller's units (`files`). Nothing is written anywhere: a stored root is
// immutable, and the caller reviews and applies the patch.
//
// Refused rather than rendered in part (a partial rename compiles nowhere):
// - an edit of a file outside the tree (a dependency, the toolchain's library);
// - resource operations (create, rename or delete a file);
// - more than MAX_FILES files or MAX_EDITS edits;
// - edits that overlap or fall outside their file.
// LSP: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#workspaceEdit
import type { Coordinate } from '../lsp/answer/coordinates.js';
import type { Scrubber } from '../lsp/answer/scrub.js';
import type { TargetFile } from '../lsp/target-file.js';
import { convertRange, type Encoding } from '../lsp/wire/encoding.js';
import { isObject, isRange, cleanRange, type Range } from '../lsp/wire/lsp-types.js';
import { EditError, lineEdits, type TextEdit } from './text-edits.js';
import { linesOf, unifiedDiff } from './unified-diff.js';

export const MAX_FILES = 1000;
export const MAX_EDITS = 20_000;

export type FileEdits = {
  path: string;
  edits: { range: Range; newText: string }[];
};

export type RenderedEdit = {
  patch: string;
  files: FileEdits[];
};

export interface EditContext {
  resolve(uri: string): Promise<Coordinate>;
  /** A checked tree file (size-bounded, inside the tree, no link followed). */
  readTree(path: string): Promise<TargetFile>;
  serverEncoding: Encoding;
  encoding: Encoding;
  scrub: Scrubber;
}

function textEdits(x: unknown): TextEdit[] {
  if (!Array.isArray(x)) throw new EditError('the server sent malformed edits');
  return x.map((e) => {
    if (!isObject(e) || !isRange(e.range) || typeof e.newText !== 'string') throw new EditError('the server sent a malformed edit');
    return { range: cleanRange(e.range), newText: e.newText };
  });
}

/** uri → its edits, from `changes` or `documentChanges` (TextDocumentEdits only). */
function editsByUri(raw: Record<string, unknown>): Map<string, TextEdit[]> {
  const out = new Map<string, TextEdit[]>();
  const add = (uri: unknown, edits: TextEdit[]) => {
    if (typeof uri !== 'string') throw new EditError('the server sent an edit without a file');
    out.set(uri, [...(out.get(uri) ?? []), ...edits]);
  };
  if (Array.isArray(raw.documentChanges)) {
    for (const c of raw.documentChanges) {
      if (isObject(c) && typeof c.kind === 'string') throw new EditError(`the edit would ${c.kind} a file, and lspd renders edits of existing files only`);
      if (!isObject(c) || !isObject(c.textDocument)) throw new EditError('the server sent a malformed document change');
      add(c.textDocument.uri, textEdits(c.edits));
    }
  } else if (isObject(raw.changes)) {
    for (const [uri, edits] of Object.entries(raw.changes)) add(uri, textEdits(edits));
  }
  return out;
}

/** Render a WorkspaceEdit; throws EditError saying why it cannot be rendered whole. */
export async function renderWorkspaceEdit(raw: unknown, ctx: EditContext): Promise<RenderedEdit> {
  if (!isObject(raw)) throw new EditError('the server has no edit for this position');
  const byUri = editsByUri(raw);
  if (byUri.size > MAX_FILES) throw new EditError(`the edit touches ${byUri.size} files, past lspd's bound of ${MAX_FILES}`);
  const total = [...byUri.values()].reduce((n, e) => n + e.length, 0);
  if (total > MAX_EDITS) throw new EditError(`the edit has ${total} changes, past lspd's bound of ${MAX_EDITS}`);

  const files: { path: string; edits: TextEdit[] }[] = [];
  const outside: string[] = [];
  for (const [uri, edits] of byUri) {
    const c = await ctx.resolve(uri);
    if (c.kind === 'tree') files.push({ path: c.path, edits });
    else outside.push(c.kind === 'external' ? `${c.module}@${c.version}` : 'a file outside the tree and its dependencies');
  }
  if (outside.length > 0) {
    const named = [...new Set(outside)].slice(0, 5).join(', ');
    throw new EditError(`the edit would change ${outside.length} file(s) outside the uploaded tree (${named}); lspd edits the tree only`);
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  let patch = '';
  const rendered: FileEdits[] = [];
  for (const f of files) {
    const target = await ctx.readTree(f.path);
    // Server text goes through the scrubber like every other: a host path in an edit would be a leak.
    const edits = f.edits.map((e) => ({ range: e.range, newText: ctx.scrub(e.newText) }));
    const lines = linesOf(target.text);
    patch += unifiedDiff(f.path, lines, lineEdits(lines, edits, ctx.serverEncoding));
    const lineAt = (n: number) => target.lines[n];
    rendered.push({ path: f.path, edits: edits.map((e) => ({ range: convertRange(e.range, lineAt, ctx.serverEncoding, ctx.encoding), newText: e.newText })) });
  }
  return { patch, files: rendered };
}
