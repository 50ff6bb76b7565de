// A bounded cache of things learned about stored roots (file lines, checked target
// files, workspace answers, scrubbers, /ask scans). Roots are immutable, so an
// entry stays true for as long as its root exists, but a key can be DELETEd and
// uploaded again with another tree: every entry is therefore keyed by the root's
// identity AND its generation (RootInfo.generation, new on every upload), and a
// root's entries of every generation are dropped together when it goes.
import { LRUCache } from 'lru-cache';

/** A stored root as caches see it: its id (`org/repo/sha`) and which upload of it. */
export interface RootRef {
  id: string;
  generation: string;
}

export interface RootCacheOptions<V> {
  max: number;
  maxSize?: number;
  sizeCalculation?: (v: V) => number;
}

const SEP = '\u0000';

/** Prefix of every key about `root`: its id, then its generation. */
export function rootScope(root: RootRef): string {
  return `${root.id}${SEP}${root.generation}${SEP}`;
}

export class RootCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<string, V>;
  /** root id → full keys held, so a removed root's entries go with it. */
  readonly #byRoot = new Map<string, Set<string>>();

  constructor(opts: RootCacheOptions<V>) {
    this.#lru = new LRUCache<string, V>({
      ...opts,
      dispose: (_v, key, reason) => {
        if (reason !== 'set') this.#unindex(key); // 'set': replaced under the same key, still held
      },
    });
  }

  get(root: RootRef, key: string): V | undefined {
    return this.#lru.get(rootScope(root) + key);
  }

  set(root: RootRef, key: string, value: V): void {
    const full = rootScope(root) + key;
    this.#lru.set(full, value);
    // An entry larger than maxSize is not kept: nothing to index.
    if (!this.#lru.has(full)) return;
    let keys = this.#byRoot.get(root.id);
    if (!keys) this.#byRoot.set(root.id, (keys = new Set()));
    keys.add(full);
  }

  delete(root: RootRef, key: string): void {
    this.#lru.delete(rootScope(root) + key);
  }

  /** Forget everything about the root, every generation of it. */
  dropRoot(id: string): void {
    const keys = this.#byRoot.get(id);
    if (!keys) return;
    this.#byRoot.delete(id);
    for (const k of keys) this.#lru.delete(k);
  }

  get size(): number {
    return this.#lru.size;
  }

  #unindex(full: string): void {
    const id = full.slice(0, full.indexOf(SEP));
    const keys = this.#byRoot.get(id);
    keys?.delete(full);
    if (keys?.size === 0) this.#byRoot.delete(id);
  }
}
