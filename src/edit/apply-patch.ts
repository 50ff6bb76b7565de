// A unified diff parsed and applied to texts in memory (POST /v1/check): the files
// it modifies, adds (`--- /dev/null`) and deletes (`+++ /dev/null`), git's
// `diff --git` headers or plain `---`/`+++` ones, `\ No newline at end of file`, and
// each line's own terminator kept (a CRLF file's `-`/`+` lines carry their \r).
// The patch is caller input: its size is bounded before it is read (the caller),
// files and hunks are counted here, every path goes through the routes' relPath
// rules (no `..`, nothing absolute), and nothing is ever written to disk.
// A hunk applies where its old lines match exactly, at its stated line or the
// nearest place after the previous hunk (git apply's offset, never its fuzz): a
// check against lines that are not there would answer about another program.
// Format: https://www.gnu.org/software/diffutils/manual/html_node/Detailed-Unified.html
// and git's extended headers: https://git-scm.com/docs/diff-format
import { relPath } from '../api/schemas.js';
import { linesOf } from './unified-diff.js';

export type FileChange = 'modify' | 'add' | 'delete';

export interface HunkLine {
  mark: ' ' | '-' | '+';
  /** The line with its terminator; none when `\ No newline at end of file` followed it. */
  text: string;
}

export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  lines: HunkLine[];
}

export interface FilePatch {
  change: FileChange;
  path: string;
  hunks: Hunk[];
}

/** The patch cannot be read (400): `line` is 1-based in the patch. */
export class PatchSyntaxError extends Error {
  override name = 'PatchSyntaxError';
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`patch line ${line}: ${message}`);
  }
}

/** The patch does not apply to the file (422 patch_does_not_apply): `hunk` is 1-based, 0 for the file as a whole. */
export class PatchApplyError extends Error {
  override name = 'PatchApplyError';
  constructor(
    readonly path: string,
    readonly hunk: number,
    readonly why: string,
  ) {
    super(hunk > 0 ? `hunk ${hunk} of ${path} does not apply: ${why}` : `${path}: ${why}`);
  }
}

/** More than the bounds allow (413). */
export class PatchTooLargeError extends Error {
  override name = 'PatchTooLargeError';
}

export interface PatchLimits {
  maxFiles: number;
  maxHunks: number;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;
const UNSUPPORTED = /^(rename from|rename to|copy from|copy to|similarity index|dissimilarity index|GIT binary patch|Binary files )/;

/** Parse a unified diff into its files; throws PatchSyntaxError or PatchTooLargeError. */
export function parsePatch(text: string, limits: PatchLimits): FilePatch[] {
  const lines = linesOf(text);
  const files: FilePatch[] = [];
  const seen = new Set<string>();
  let hunks = 0;
  let i = 0;
  let gitHeader = false;
  let gitMode: FileChange | undefined;
  const bare = (l: string) => l.replace(/\r?\n$|\r$/, '');
  while (i < lines.length) {
    const line = bare(lines[i]!);
    const at = i + 1;
    if (line.startsWith('diff --git ')) {
      gitHeader = true;
      gitMode = undefined;
      i++;
      continue;
    }
    if (UNSUPPORTED.test(line)) throw new PatchSyntaxError('renames, copies and binary patches are not checked; send the file as deleted and added', at);
    if (gitHeader && line.startsWith('new file mode')) gitMode = 'add';
    if (gitHeader && line.startsWith('deleted file mode')) gitMode = 'delete';
    if (!line.startsWith('--- ')) {
      // Anything before a file's `---` (a commit message, `index`, mode lines) is not the patch's business.
      if (HUNK_HEADER.test(line)) throw new PatchSyntaxError('a hunk before any ---/+++ file header', at);
      i++;
      continue;
    }
    const next = lines[i + 1] === undefined ? undefined : bare(lines[i + 1]!);
    if (next === undefined || !next.startsWith('+++ ')) throw new PatchSyntaxError('--- is not followed by +++', at);
    const oldPath = headerPath(line.slice(4), at);
    const newPath = headerPath(next.slice(4), at + 1);
    i += 2;
    let change: FileChange;
    let path: string;
    if (oldPath === undefined && newPath === undefined) throw new PatchSyntaxError('both sides are /dev/null', at);
    if (oldPath === undefined) ((change = 'add'), (path = newPath!));
    else if (newPath === undefined) ((change = 'delete'), (path = oldPath));
    else {
      if (oldPath !== newPath) throw new PatchSyntaxError(`${oldPath} and ${newPath} differ: renames are not checked`, at);
      change = 'modify';
      path = oldPath;
    }
    if (gitMode !== undefined && gitMode !== change) throw new PatchSyntaxError(`the git header says ${gitMode} but the file header says ${change}`, at);
    gitHeader = false;
    gitMode = undefined;
    if (seen.has(path)) throw new PatchSyntaxError(`${path} is patched twice`, at);
    seen.add(path);
    if (files.length >= limits.maxFiles) throw new PatchTooLargeError(`The patch changes more than ${limits.maxFiles} files.`);
    const file: FilePatch = { change, path, hunks: [] };
    files.push(file);
    while (i < lines.length) {
      const h = HUNK_HEADER.exec(bare(lines[i]!));
      if (!h) break;
      if (++hunks > limits.maxHunks) throw new PatchTooLargeError(`The patch has more than ${limits.maxHunks} hunks.`);
      const hunk: Hunk = { oldStart: +h[1]!, oldCount: h[2] === undefined ? 1 : +h[2], newStart: +h[3]!, newCount: h[4] === undefined ? 1 : +h[4], lines: [] };
      const hunkAt = i + 1;
      i++;
      let olds = 0;
      let news = 0;
      while (olds < hunk.oldCount || news < hunk.newCount) {
        const raw = lines[i];
        if (raw === undefined) throw new PatchSyntaxError(`the hunk ends early (it declares -${hunk.oldCount} +${hunk.newCount} lines)`, hunkAt);
        // Some tools strip the one space of an empty context line.
        const mark = raw === '\n' || raw === '\r\n' ? ' ' : raw[0];
        const body = raw === '\n' || raw === '\r\n' ? raw : raw.slice(1);
        if (mark === '\\') {
          dropTerminator(hunk, i + 1);
          i++;
          continue;
        }
        if (mark !== ' ' && mark !== '-' && mark !== '+') throw new PatchSyntaxError(`a hunk line starts with neither space, - nor +`, i + 1);
        if (mark !== '+') olds++;
        if (mark !== '-') news++;
        if (olds > hunk.oldCount || news > hunk.newCount)
          throw new PatchSyntaxError(`the hunk has more lines than it declares (-${hunk.oldCount} +${hunk.newCount})`, i + 1);
        hunk.lines.push({ mark, text: body });
        i++;
      }
      // The marker may follow the hunk's last line.
      if (lines[i] !== undefined && lines[i]!.startsWith('\\')) dropTerminator(hunk, ++i);
      if (change === 'add' && hunk.oldCount !== 0) throw new PatchSyntaxError(`${path} is added but its hunk has old lines`, hunkAt);
      if (change === 'delete' && hunk.newCount !== 0) throw new PatchSyntaxError(`${path} is deleted but its hunk has new lines`, hunkAt);
      file.hunks.push(hunk);
    }
    if (file.hunks.length === 0 && change === 'modify') throw new PatchSyntaxError(`${path} has no hunk`, at);
  }
  if (files.length === 0) throw new PatchSyntaxError('no file header (--- a/path, +++ b/path) found', 1);
  return files;
}

function dropTerminator(hunk: Hunk, at: number): void {
  const last = hunk.lines[hunk.lines.length - 1];
  if (!last) throw new PatchSyntaxError('"\\ No newline at end of file" follows no line', at);
  last.text = last.text.replace(/\r?\n$|\r$/, '');
}

/** The path of a ---/+++ header, its a/ or b/ prefix removed; undefined for /dev/null. */
function headerPath(spec: string, at: number): string | undefined {
  let p = spec;
  if (p.startsWith('"')) {
    // git quotes names with special characters C-style; JSON reads the escapes git uses for them.
    const end = p.lastIndexOf('"');
    try {
      p = JSON.parse(p.slice(0, end + 1)) as string;
    } catch {
      throw new PatchSyntaxError('a quoted path that cannot be read', at);
    }
  } else {
    const tab = p.indexOf('\t'); // diff -u appends a tab and a timestamp
    if (tab >= 0) p = p.slice(0, tab);
    p = p.trimEnd();
  }
  if (p === '/dev/null') return undefined;
  if (p.startsWith('a/') || p.startsWith('b/')) p = p.slice(2);
  const ok = relPath.safeParse(p);
  if (!ok.success) throw new PatchSyntaxError(`path ${JSON.stringify(p.slice(0, 200))}: ${ok.error.issues[0]?.message ?? 'not a root-relative path'}`, at);
  return p;
}

/**
 * The file's text after the patch. `old` is the stored text, undefined when the
 * tree has no such file. Throws PatchApplyError naming the file and hunk.
 */
export function applyFilePatch(file: FilePatch, old: string | undefined): string {
  if (file.change === 'add') {
    if (old !== undefined) throw new PatchApplyError(file.path, 0, 'it is added but the tree has it already');
    return file.hunks.flatMap((h) => h.lines.map((l) => l.text)).join('');
  }
  if (old === undefined) throw new PatchApplyError(file.path, 0, `it is ${file.change === 'delete' ? 'deleted' : 'modified'} but the tree has no such file`);
  const oldLines = linesOf(old);
  const out: string[] = [];
  let at = 0; // next old line not yet copied
  file.hunks.forEach((h, k) => {
    const want = h.lines.filter((l) => l.mark !== '+').map((l) => l.text);
    const stated = Math.max(0, h.oldCount === 0 ? h.oldStart : h.oldStart - 1);
    const pos = findLines(oldLines, want, stated, at);
    if (pos === undefined) {
      const where =
        stated < oldLines.length ? `line ${stated + 1} reads ${JSON.stringify(oldLines[stated]!.slice(0, 120))}` : `the file has ${oldLines.length} lines`;
      throw new PatchApplyError(file.path, k + 1, `its old lines are not in the file (it starts at line ${h.oldStart}; ${where})`);
    }
    for (; at < pos; at++) out.push(oldLines[at]!);
    for (const l of h.lines) if (l.mark !== '-') out.push(l.text);
    at = pos + want.length;
  });
  for (; at < oldLines.length; at++) out.push(oldLines[at]!);
  const text = out.join('');
  if (file.change === 'delete' && text !== '') throw new PatchApplyError(file.path, 0, 'it is deleted but the patch does not remove all of its lines');
  return text;
}

/** Where `want` matches `lines` exactly, at `stated` or the nearest place at or after `from`. */
function findLines(lines: readonly string[], want: readonly string[], stated: number, from: number): number | undefined {
  const matches = (p: number) => p >= from && p + want.length <= lines.length && want.every((w, j) => lines[p + j] === w);
  if (matches(stated)) return stated;
  for (let d = 1; d <= lines.length; d++) {
    if (matches(stated - d)) return stated - d;
    if (matches(stated + d)) return stated + d;
    if (stated - d < from && stated + d + want.length > lines.length) break;
  }
  return undefined;
}
