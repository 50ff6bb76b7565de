// The few LSP 3.17 shapes lspd reads and writes, declared here rather than pulled
// from vscode-languageserver-types so the projection layer depends on nothing.
// These describe what a well-behaved server sends; the projection never assumes a
// server is well-behaved and re-checks every field it reads (see `isPosition` …).
// Spec: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#position */
export interface Position {
  /** Zero-based line. */
  line: number;
  /** Zero-based offset in the line, in the negotiated position encoding's units. */
  character: number;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#range (end exclusive) */
export interface Range {
  start: Position;
  end: Position;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#location */
export interface Location {
  uri: string;
  range: Range;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#locationLink */
export interface LocationLink {
  originSelectionRange?: Range;
  targetUri: string;
  /** The whole target (e.g. a function with its body). */
  targetRange: Range;
  /** The part to select (e.g. the function's name); what a caller wants to land on. */
  targetSelectionRange: Range;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#markupContentInnerDefinition */
export interface MarkupContent {
  kind: 'plaintext' | 'markdown';
  value: string;
}

/** Deprecated in 3.17 but still sent (pyright, older servers). https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#markedString */
export type MarkedString = string | { language: string; value: string };

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#hover */
export interface Hover {
  contents: MarkupContent | MarkedString | MarkedString[];
  range?: Range;
}

/**
 * https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#symbolKind
 * Index = the numeric kind; names are the spec's enum names with a lower-case first letter.
 */
export const SYMBOL_KIND_NAMES = [
  'unknown', // 0 is not a kind; a server that sends it gets "unknown"
  'file',
  'module',
  'namespace',
  'package',
  'class',
  'method',
  'property',
  'field',
  'constructor',
  'enum',
  'interface',
  'function',
  'variable',
  'constant',
  'string',
  'number',
  'boolean',
  'array',
  'object',
  'key',
  'null',
  'enumMember',
  'struct',
  'event',
  'operator',
  'typeParameter',
] as const;
export type SymbolKindName = (typeof SYMBOL_KIND_NAMES)[number];

export function symbolKindName(kind: unknown): SymbolKindName {
  return typeof kind === 'number' && Number.isInteger(kind) ? (SYMBOL_KIND_NAMES[kind] ?? 'unknown') : 'unknown';
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#documentSymbol */
export interface DocumentSymbol {
  name: string;
  detail?: string;
  kind: number;
  /** The whole declaration, body included. */
  range: Range;
  /** The name; must be contained in `range`. */
  selectionRange: Range;
  children?: DocumentSymbol[];
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#symbolInformation */
export interface SymbolInformation {
  name: string;
  kind: number;
  location: Location;
  containerName?: string;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#workspaceSymbol (location may lack a range until resolved) */
export interface WorkspaceSymbol {
  name: string;
  kind: number;
  location: Location | { uri: string };
  containerName?: string;
}

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#diagnosticSeverity */
export const SEVERITY_NAMES = ['error', 'error', 'warning', 'information', 'hint'] as const;
export type SeverityName = 'error' | 'warning' | 'information' | 'hint';

/** https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#diagnostic */
export interface Diagnostic {
  range: Range;
  /** 1 error, 2 warning, 3 information, 4 hint; omitted means the client decides (we say error, as VS Code does). */
  severity?: number;
  code?: number | string;
  source?: string;
  message: string;
}

/** Pull diagnostics answer. https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#documentDiagnosticReport */
export type DocumentDiagnosticReport = { kind: 'full'; items: Diagnostic[] } | { kind: 'unchanged'; resultId: string };

// --- guards: a server is a third party; check before reading ---

const isNat = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A position with numeric fields (negative or fractional values are clamped later, not refused). */
export function isPosition(v: unknown): v is Position {
  return isObject(v) && isNat(v.line) && isNat(v.character);
}

export function isRange(v: unknown): v is Range {
  return isObject(v) && isPosition(v.start) && isPosition(v.end);
}

export function isLocation(v: unknown): v is Location {
  return isObject(v) && typeof v.uri === 'string' && isRange(v.range);
}

export function isLocationLink(v: unknown): v is LocationLink {
  return isObject(v) && typeof v.targetUri === 'string' && isRange(v.targetRange) && isRange(v.targetSelectionRange);
}

const MAX_COORD = 1e9;
const int = (n: number) => (n > 0 ? Math.min(Math.floor(n), MAX_COORD) : 0);

/** A copy with non-negative integer fields: keys, sorting and JSON stay sane whatever the server sent. */
export function cleanRange(r: Range): Range {
  return {
    start: { line: int(r.start.line), character: int(r.start.character) },
    end: { line: int(r.end.line), character: int(r.end.character) },
  };
}
