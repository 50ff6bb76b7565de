// The result cache. A root is immutable (its key holds the sha), so an answer for
// (root, server, op, path, position, encoding, options) is exact for as long as the
// root exists: no invalidation beyond dropping a root's entries when it goes. Only
// complete answers are kept; an `incomplete` one would pin a half-indexed view.
import { LRUCache } from 'lru-cache';
import type { Metrics } from '../metrics.js';
import type { LspQuery } from '../schemas.js';

/** Any answer object; `incomplete: true` ones are never kept. */
export type CachedAnswer = { incomplete?: boolean };

export class ResultCache<T extends CachedAnswer = CachedAnswer> {
  private readonly lru: LRUCache<string, T> | undefined;
  private readonly metrics: Metrics;
  /** rootId → keys, so a deleted root's entries go with it. */
  private readonly byRoot = new Map<string, Set<string>>();

  constructor(entries: number, metrics: Metrics) {
    this.metrics = metrics;
    this.lru =
      entries > 0
        ? new LRUCache<string, T>({
            max: entries,
            dispose: (_v, key, reason) => {
              if (reason === 'set') return; // replaced under the same key: still indexed
              const rootId = key.slice(0, key.indexOf('\u0000'));
              const keys = this.byRoot.get(rootId);
              keys?.delete(key);
              if (keys?.size === 0) this.byRoot.delete(rootId);
            },
          })
        : undefined;
  }

  /** Every field that changes an answer, in a fixed order. */
  static keyOf(rootId: string, server: string, q: LspQuery): string {
    return [
      rootId,
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
    ].join('\u0000');
  }

  get(key: string): T | undefined {
    if (!this.lru) return undefined;
    const v = this.lru.get(key);
    this.metrics.cache.inc({ result: v ? 'hit' : 'miss' });
    return v;
  }

  set(key: string, answer: T): void {
    if (!this.lru || answer.incomplete === true) return;
    const rootId = key.slice(0, key.indexOf('\u0000'));
    let keys = this.byRoot.get(rootId);
    if (!keys) this.byRoot.set(rootId, (keys = new Set()));
    keys.add(key);
    this.lru.set(key, answer);
  }

  dropRoot(rootId: string): void {
    const keys = this.byRoot.get(rootId);
    if (!keys || !this.lru) return;
    for (const k of [...keys]) this.lru.delete(k);
    this.byRoot.delete(rootId);
  }

  get size(): number {
    return this.lru?.size ?? 0;
  }
}
