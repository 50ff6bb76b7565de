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
// and no caller can change a kept answer through an object it was handed. A hit
// pays one JSON.parse of at most LSPD_MAX_ANSWER_BYTES.
import type { Metrics } from '../metrics.js';
import { isGraphOp, type LspQuery } from '../api/schemas.js';
import { RootCache, type RootRef } from '../store/root-cache.js';

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
  private readonly metrics: Metrics;

  constructor(bounds: ResultCacheBounds, metrics: Metrics) {
    this.metrics = metrics;
    this.cache =
      bounds.entries > 0 && bounds.bytes > 0 ? new RootCache<Buffer>({ max: bounds.entries, maxBytes: bounds.bytes, sizeOf: (b) => b.length }) : undefined;
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
      // rename: another new name is another patch (bench/edits caught a second name answered with the first's patch).
      q.newName ?? '',
      q.endLine ?? '',
      q.endCharacter ?? '',
      q.only?.join(',') ?? '',
    ];
    return fields.join('\u0000');
  }

  get(root: RootRef, key: string): T | undefined {
    if (!this.cache) return undefined;
    const v = this.cache.get(root, key);
    this.metrics.cache.inc({ result: v ? 'hit' : 'miss' });
    return v ? (JSON.parse(v.toString('utf8')) as T) : undefined;
  }

  set(root: RootRef, key: string, answer: T): void {
    if (!this.cache || answer.incomplete === true) return;
    const json = JSON.stringify(answer);
    // Not Buffer.from: a small one is a slice of a shared 8 KiB pool slab, which it would keep alive uncharged.
    const b = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
    b.write(json, 'utf8');
    this.cache.set(root, key, b);
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
