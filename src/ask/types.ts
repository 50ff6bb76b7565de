// The shapes /ask works with, and the one context every resolution step gets.
// Answers are the shared response schemas (src/api/responses.ts), so /ask renders
// exactly what /v1/code/lsp renders.
import type { z } from 'zod';
import type { location, LspAnswer } from '../api/responses.js';
import type { RootKey, lspQuery } from '../api/schemas.js';
import type { Language } from '../languages.js';
import type { Mentions } from './use-scan.js';

export type Loc = z.infer<typeof location>;
export type Range = Loc['range'];
/** A /v1/code/lsp body before defaults are applied (what resolution writes). */
export type LspRequest = z.input<typeof lspQuery>;

export interface AskLimits {
  /** Most symbols one name resolves to and lists (DESIGN.md: never a flood). */
  maxCandidates: number;
  /** Most use-site positions asked about for one name. */
  maxProbes: number;
  /** Most files asked for their document symbols when their server has no workspace symbols (outline.ts). */
  maxOutlineFiles: number;
  /** Most tree files read looking for a use of a name. */
  maxScanFiles: number;
  /** Most bytes of tree files read looking for a use of a name. */
  maxScanBytes: number;
  /** Files larger than this are not scanned for uses (generated code, bundles). */
  maxScanFileBytes: number;
  /** LSP questions in flight for one query. */
  perQueryConcurrency: number;
  /** Queries of one batch in flight. */
  batchConcurrency: number;
}

/** What a resolution step may do: ask the query service, read the tree, fan out (bounded). */
export interface AskContext {
  lsp(q: LspRequest): Promise<LspAnswer>;
  readText(root: RootKey, path: string): Promise<string | undefined>;
  /** Source files of the root that contain `leaf` (those also naming `qualifier` first); bounded, cached per root. */
  filesMentioning(root: RootKey, leaf: string, qualifier: string | undefined): Promise<Mentions>;
  /** The languages the stored root holds (empty when it is not stored). */
  languagesOf(root: RootKey): readonly Language[];
  /** Like Promise.all(items.map(fn)) with at most perQueryConcurrency in flight; results in input order. */
  map<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]>;
  limits: AskLimits;
}
