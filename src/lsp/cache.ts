// The result cache. A root is immutable (its key holds the sha), so an answer for
// (root, generation, server, op, path, position, encoding, options) is exact for as
// long as the root exists: no invalidation beyond dropping a root's entries when it
// goes. The generation keeps a re-upload under the same key (after a DELETE) from
// ever meeting an answer about the old tree. Only complete answers are kept; an
// `incomplete` one would pin a half-indexed view.
//
// Answers are kept serialized (UTF-8 JSON in a Buffer) and charged their length:
// the bytes held are then exact, not an estimate of an object graph's heap (two to
// four times its JSON), they sit outside the V8 heap whose limit kills the daemon,
// and no caller can change a kept answer through an object it was handed. The HTTP
// route sends a hit's bytes as kept (answer-body.ts); a service that reads answers
// pays one JSON.parse of at most LSPD_MAX_ANSWER_BYTES.
import type { Metrics } from '../metrics.js';
import { isGraphOp, type LspQuery } from '../api/schemas.js';
import { RootCache, type RootRef } from '../store/root-cache.js';
import { keptBody } from './answer-body.js';

/** Any answer object; `incomplete: true` ones are never kept. */
export type CachedAnswer = { incomplete?: boolean };

export interface ResultCacheBounds {
  /** Most answers kept (0: no cache). */
  entries: number;
  /** Most bytes of serialized answers (and their keys) kept. */
  bytes: number;
}

export class ResultCache<T extends CachedAnswer = CachedAnswer> {
  private readonly cache: RootCache<Buffer> | undefined;
  /** Pre-bound: a labelled inc() hashes its labels on every call. */
  private readonly hits: { inc(): void };
  private readonly misses: { inc(): void };

  constructor(bounds: ResultCacheBounds, metrics: Metrics) {
    this.hits = metrics.cache.tally({ result: 'hit' });
    this.misses = metrics.cache.tally({ result: 'miss' });
    this.cache =
      bounds.entries > 0 && bounds.bytes > 0 ? new RootCache<Buffer>({ max: bounds.entries, maxBytes: bounds.bytes, sizeOf: (b) => b.length }) : undefined;
  }

  /** Every field of a query that changes its answer about one root, in a fixed order. */
  /** `paging` false: the key less the cursor and page size (what a paging cursor is bound to). */
  static keyOf(server: string, q: LspQuery, paging = true): string {
    // One template, not an array joined: this runs on every query, hits included.
    const S = '\u0000';
    return (
      `${server}${S}${q.op}${S}${q.path ?? ''}${S}${q.line ?? ''}${S}${q.character ?? ''}${S}${q.encoding}${S}${q.includeDeclaration ? 1 : 0}` +
      `${S}${q.query ?? ''}${S}${q.context}${S}${paging ? (q.limit ?? '') : ''}${S}${paging ? (q.cursor ?? '') : ''}${S}${isGraphOp(q.op) ? (q.depth ?? 1) : ''}` +
      // rename: another new name is another patch (bench/edits caught a second name answered with the first's patch).
      `${S}${q.newName ?? ''}${S}${q.endLine ?? ''}${S}${q.endCharacter ?? ''}${S}${q.only?.join(',') ?? ''}`
    );
  }

  /** The kept bytes of an answer (answer-body.ts: JSON without elapsed_ms). */
  getBody(root: RootRef, key: string): Buffer | undefined {
    if (!this.cache) return undefined;
    const v = this.cache.get(root, key);
    (v ? this.hits : this.misses).inc();
    return v;
  }

  /** The kept answer as an object (a copy: nothing a caller does to it changes what is kept). */
  get(root: RootRef, key: string): T | undefined {
    const kept = this.getBody(root, key);
    return kept ? (JSON.parse(kept.toString('utf8')) as T) : undefined;
  }

  /** Would `answer` be kept (a cache, and a complete answer)? Its bytes need not be made otherwise. */
  keeps(answer: T): boolean {
    return this.cache !== undefined && answer.incomplete !== true;
  }

  /** Keep `answer`'s bytes (keptBody of it); an incomplete answer is never kept. */
  setBody(root: RootRef, key: string, answer: T, kept: Buffer): void {
    if (this.cache && answer.incomplete !== true) this.cache.set(root, key, kept);
  }

  set(root: RootRef, key: string, answer: T): void {
    if (this.cache && answer.incomplete !== true) this.cache.set(root, key, keptBody(answer));
  }

  /** The root went away: its answers of every generation go with it. */
  dropRoot(rootId: string): void {
    this.cache?.dropRoot(rootId);
  }

  get size(): number {
    return this.cache?.size ?? 0;
  }

  /** Bytes charged for the answers held. */
  get bytes(): number {
    return this.cache?.bytes ?? 0;
  }
}
