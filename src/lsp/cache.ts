// The result cache. A root is immutable (its key holds the sha), so an answer for
// (root, generation, server, op, path, position, encoding, options) is exact for as
// long as the root exists: no invalidation beyond dropping a root's entries when it
// goes. The generation keeps a re-upload under the same key (after a DELETE) from
// ever meeting an answer about the old tree. Only complete answers are kept; an
// `incomplete` one would pin a half-indexed view.
import type { Metrics } from '../metrics.js';
import { isGraphOp, type LspQuery } from '../schemas.js';
import { RootCache, type RootRef } from '../store/root-cache.js';

/** Any answer object; `incomplete: true` ones are never kept. */
export type CachedAnswer = { incomplete?: boolean };

export class ResultCache<T extends CachedAnswer = CachedAnswer> {
  private readonly cache: RootCache<T> | undefined;
  private readonly metrics: Metrics;

  constructor(entries: number, metrics: Metrics) {
    this.metrics = metrics;
    this.cache = entries > 0 ? new RootCache<T>({ max: entries }) : undefined;
  }

  /** Every field of a query that changes its answer about one root, in a fixed order. */
  static keyOf(server: string, q: LspQuery): string {
    const fields = [
      server,
      q.op,
      q.path ?? '',
      q.line ?? '',
      q.character ?? '',
      q.encoding,
      q.includeDeclaration ? 1 : 0,
      q.query ?? '',
      q.context,
      q.limit ?? '',
      q.cursor ?? '',
      isGraphOp(q.op) ? (q.depth ?? 1) : '',
    ];
    return fields.join('\u0000');
  }

  get(root: RootRef, key: string): T | undefined {
    if (!this.cache) return undefined;
    const v = this.cache.get(root, key);
    this.metrics.cache.inc({ result: v ? 'hit' : 'miss' });
    return v;
  }

  set(root: RootRef, key: string, answer: T): void {
    if (!this.cache || answer.incomplete === true) return;
    this.cache.set(root, key, answer);
  }

  /** The root went away: its answers of every generation go with it. */
  dropRoot(rootId: string): void {
    this.cache?.dropRoot(rootId);
  }

  get size(): number {
    return this.cache?.size ?? 0;
  }
}
