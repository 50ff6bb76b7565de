// A unified diff of one file, built from the edits themselves rather than by diffing
// two texts: a rename touches a few lines of a file that may have tens of thousands,
// and the edited line spans are exactly the hunks' changed lines, so the patch is
// linear in the file and needs no LCS. The output is what `git apply` takes on the
// uploaded tree: `diff --git`, `a/` and `b/` root-relative paths, three lines of
// context, `\ No newline at end of file` where a file ends without one, and each
// line's own terminator kept (CRLF files stay CRLF).
// Format: https://www.gnu.org/software/diffutils/manual/html_node/Detailed-Unified.html
import type { LineEdit } from './text-edits.js';

const CONTEXT = 3;

/** Lines of `text` with their terminators (\n, \r\n or \r, as LSP counts lines); a final line may have none. */
export function linesOf(text: string): string[] {
  return text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) ?? [];
}

function quoteIfNeeded(path: string): string {
  // git quotes paths with control characters, quotes or backslashes (core.quotePath); names we accept have none but spaces.
  return /["\\\x00-\x1f\x7f]/.test(path) ? JSON.stringify(path) : path;
}

function body(line: string, mark: string): string {
  const ends = /(?:\r\n|\r|\n)$/.test(line);
  return ends ? `${mark}${line}` : `${mark}${line}\n\\ No newline at end of file\n`;
}

/**
 * The patch for one file. `edits` are line spans of the old text (0-based, end
 * exclusive) with their replacement lines, sorted and not overlapping; spans closer
 * than twice the context join one hunk, as diff does. Empty when nothing changes.
 */
export function unifiedDiff(path: string, oldLines: readonly string[], edits: readonly LineEdit[]): string {
  const changed = edits.filter((e) => e.end - e.start !== e.lines.length || e.lines.some((l, i) => l !== oldLines[e.start + i]));
  if (changed.length === 0) return '';
  const p = quoteIfNeeded(path);
  let out = `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n`;
  let i = 0;
  let shift = 0; // new-file line numbers run ahead of old ones by what earlier hunks added
  while (i < changed.length) {
    let j = i;
    while (j + 1 < changed.length && changed[j + 1]!.start - changed[j]!.end <= 2 * CONTEXT) j++;
    const from = Math.max(0, changed[i]!.start - CONTEXT);
    const to = Math.min(oldLines.length, changed[j]!.end + CONTEXT);
    let text = '';
    let oldCount = 0;
    let newCount = 0;
    let at = from;
    for (let k = i; k <= j; k++) {
      const e = changed[k]!;
      for (; at < e.start; at++, oldCount++, newCount++) text += body(oldLines[at]!, ' ');
      for (; at < e.end; at++, oldCount++) text += body(oldLines[at]!, '-');
      for (const l of e.lines) ((text += body(l, '+')), newCount++);
    }
    for (; at < to; at++, oldCount++, newCount++) text += body(oldLines[at]!, ' ');
    // A hunk of no old (or new) lines is numbered at the line before it, as diff does.
    const oldStart = oldCount === 0 ? from : from + 1;
    const newStart = newCount === 0 ? from + shift : from + shift + 1;
    out += `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@\n${text}`;
    shift += newCount - oldCount;
    i = j + 1;
  }
  return out;
}
