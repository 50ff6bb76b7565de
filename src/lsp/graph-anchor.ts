// Call and type hierarchies asked where a name is used rather than declared: an
// import specifier, a re-export, a use site. A server prepares the hierarchy item of
// what is under the position, and at an import that is the import's own alias, which
// nothing calls (TS 7: incomingCalls on `escapeHTML` where playwright's index.ts
// imports it gave 0 nodes; at its declaration, 5). An agent asks where it sees a
// name, and that is often an import, so a walk that found nothing below its roots is
// asked again at the declaration the server's own `definition` resolves the position
// to. Only then: a walk that found something is the server's answer as it was asked
// (clangd's definition of a definition is its declaration in a header, which would
// move every answer that is right today).
// LSP: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_definition
import { isObject, isRange, type Position, type Range } from './wire/lsp-types.js';
import type { Session } from './session/session.js';
import type { Abortable } from '../util/deadline.js';

export interface Anchor {
  textDocument: { uri: string };
  position: Position;
}

const within = (p: Position, r: Range) =>
  (p.line > r.start.line || (p.line === r.start.line && p.character >= r.start.character)) &&
  (p.line < r.end.line || (p.line === r.end.line && p.character <= r.end.character));

/** The first Location or LocationLink of a definition answer, as the place to prepare at. */
function firstTarget(raw: unknown): { uri: string; at: Range } | undefined {
  for (const x of Array.isArray(raw) ? raw : [raw]) {
    if (!isObject(x)) continue;
    if (typeof x.targetUri === 'string' && isRange(x.targetSelectionRange)) return { uri: x.targetUri, at: x.targetSelectionRange };
    if (typeof x.uri === 'string' && isRange(x.range)) return { uri: x.uri, at: x.range };
  }
  return undefined;
}

/**
 * Where the server says the name at `from` is declared, when that is elsewhere; undefined
 * when it is here, when the server has no definition, or cannot say (the caller keeps
 * its answer). The URI is the server's own, sent back to the same server only.
 */
export async function declarationAnchor(session: Session, from: Anchor, deadline: Abortable): Promise<Anchor | undefined> {
  if (!session.supports('definitionProvider')) return undefined;
  let raw: unknown;
  try {
    raw = await session.request('textDocument/definition', from, deadline);
  } catch (err) {
    if (deadline.aborted) throw err;
    return undefined;
  }
  const t = firstTarget(raw);
  if (!t || (t.uri === from.textDocument.uri && within(from.position, t.at))) return undefined;
  return { textDocument: { uri: t.uri }, position: t.at.start };
}
