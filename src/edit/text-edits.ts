// A server's TextEdits of one file turned into line spans with their new lines, the
// form unified-diff.ts renders. Positions arrive in the server's units (UTF-16 for
// most, UTF-8 where negotiated) and are converted on the file's own lines. Edits that
// overlap, or fall outside the file, are refused, not guessed at: the server is a
// third party, and a patch that does not apply to the uploaded tree is worse than none.
// LSP: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textEdit
import { toUtf16Index, type Encoding } from '../lsp/wire/encoding.js';
import type { Range } from '../lsp/wire/lsp-types.js';
import { linesOf } from './unified-diff.js';

export interface TextEdit {
  range: Range;
  newText: string;
}

/** Old lines [start, end) replaced by `lines` (each with its terminator). */
export interface LineEdit {
  start: number;
  end: number;
  lines: string[];
}

export class EditError extends Error {
  override name = 'EditError';
}

const terminatorOf = (line: string) => /(\r\n|\r|\n)$/.exec(line)?.[1] ?? '';
const withoutTerminator = (line: string) => line.slice(0, line.length - terminatorOf(line).length);

/**
 * The edits as line spans of `oldLines` (from linesOf), sorted; edits touching the same
 * lines are joined into one span. Throws EditError on overlap or a position past the file.
 */
export function lineEdits(oldLines: readonly string[], edits: readonly TextEdit[], serverEncoding: Encoding): LineEdit[] {
  const at = (line: number, character: number, what: string): number => {
    // One past the last line is the end of a file that ends with a terminator.
    if (line === oldLines.length && character === 0) return Number.MAX_SAFE_INTEGER;
    const text = oldLines[line];
    if (text === undefined) throw new EditError(`an edit ${what} at line ${line}, past the file's ${oldLines.length} lines`);
    const bare = withoutTerminator(text);
    return Math.min(toUtf16Index(bare, character, serverEncoding), bare.length);
  };
  const sorted = [...edits].sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  const spans: { start: number; end: number; parts: { s: number; e: number; sl: number; el: number; text: string }[] }[] = [];
  let prevEnd: [number, number] = [-1, -1];
  for (const ed of sorted) {
    const { start, end } = ed.range;
    if (start.line < prevEnd[0] || (start.line === prevEnd[0] && start.character < prevEnd[1])) throw new EditError('the server sent overlapping edits');
    if (end.line < start.line || (end.line === start.line && end.character < start.character))
      throw new EditError('the server sent an edit that ends before it starts');
    const s = at(start.line, start.character, 'starts');
    const e = at(end.line, end.character, 'ends');
    prevEnd = [end.line, end.character];
    const lastLine = Math.min(end.line, oldLines.length - 1);
    const part = { s, e, sl: start.line, el: end.line === oldLines.length ? oldLines.length - 1 : lastLine, text: ed.newText };
    const cur = spans[spans.length - 1];
    // Whole lines inserted before a line (an added import) are a span of no old lines, so the
    // patch adds them alone instead of removing and re-adding the line they precede.
    const wholeLines = start.line === end.line && start.character === 0 && end.character === 0 && /(?:\r\n|\r|\n)$/.test(ed.newText);
    if (wholeLines && start.line < oldLines.length && !(cur && start.line < cur.end)) {
      spans.push({ start: start.line, end: start.line, parts: [{ ...part, el: start.line }] });
      continue;
    }
    if (cur && start.line < cur.end) {
      cur.end = Math.max(cur.end, part.el + 1);
      cur.parts.push(part);
    } else spans.push({ start: start.line, end: part.el + 1, parts: [part] });
  }
  return spans.map(({ start, end, parts }) => {
    // Rebuild the span's text with its edits applied, then split it into lines again.
    const old = oldLines.slice(start, end).join('');
    // Each line's offset in the span, summed once: a server may send thousands of edits
    // into one long span, and summing per edit would be quadratic in it.
    const offsets = [0];
    for (let l = start; l < end; l++) offsets.push(offsets[offsets.length - 1]! + oldLines[l]!.length);
    const offsetOf = (line: number) => offsets[line - start]!;
    let text = '';
    let pos = 0;
    for (const p of parts) {
      const s = offsetOf(p.sl) + Math.min(p.s, withoutTerminator(oldLines[p.sl] ?? '').length);
      const e = p.e === Number.MAX_SAFE_INTEGER ? old.length : offsetOf(p.el) + Math.min(p.e, withoutTerminator(oldLines[p.el] ?? '').length);
      text += old.slice(pos, s) + p.text;
      pos = Math.max(pos, e);
    }
    text += old.slice(pos);
    return { start, end, lines: linesOf(text) };
  });
}
