// A bounded cache of things learned about stored roots (file lines, checked target
// files, workspace answers, scrubbers, /ask scans, answers). Roots are immutable, so
// an entry stays true for as long as its root exists, but a key can be DELETEd and
// uploaded again with another tree: every entry is therefore keyed by the root's
// identity AND its generation (RootInfo.generation, new on every upload), and a
// root's entries of every generation are dropped together when it goes.
//
// Bounded in bytes, not only entries (issue 30): a count bound let 10,000 answers of
// up to 1 MiB each stay on the heap. Every entry is charged what its value takes (the
// caller's `sizeOf`, bytes held or a sound estimate) plus its key; `maxBytes` is the
// most held at once, and an entry larger than it alone is not kept.
import { LRUCache } from 'lru-cache';

/** A stored root as caches see it: its id (`org/repo/sha`) and which upload of it. */
export interface RootRef {
  id: string;
  generation: string;
}

export interface RootCacheOptions<V> {
  /** Most entries (a bound on the per-entry overhead). */
  max: number;
  /** Most bytes held, values and keys together. */
  maxBytes: number;
  /** Bytes the value takes in memory (never less than 0). */
  sizeOf: (v: V) => number;
}

const SEP = '\u0000';
/** What an entry costs beside its value: its key's characters (two bytes each at worst) and the LRU's slots, the by-root index's set entry. */
const entryBytes = (key: string) => 2 * key.length + 96;

/** Prefix of every key about `root`: its id, then its generation. */
export function rootScope(root: RootRef): string {
  return `${root.id}${SEP}${root.generation}${SEP}`;
}

export class RootCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<string, V>;
  /** root id → full keys held, so a removed root's entries go with it. */
  readonly #byRoot = new Map<string, Set<string>>();
  /** Loads under way (`load`), by full key: a second asker joins the first; settled ones are kept in the LRU, charged their size. */
  readonly #loading = new Map<string, Promise<V>>();

  constructor(opts: RootCacheOptions<V>) {
    this.#lru = new LRUCache<string, V>({
      max: opts.max,
      maxSize: opts.maxBytes,
      sizeCalculation: (v, key) => Math.max(1, Math.ceil(opts.sizeOf(v)) + entryBytes(key)),
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
    // An entry larger than maxBytes is not kept: nothing to index.
    if (!this.#lru.has(full)) return;
    let keys = this.#byRoot.get(root.id);
    if (!keys) this.#byRoot.set(root.id, (keys = new Set()));
    keys.add(full);
  }

  /**
   * The value under `key`, or `make()`'s, kept once it settles (a promise's size is
   * not known before). Askers while it runs share it; a rejection is not kept; a load
   * whose root was dropped meanwhile is answered but not kept.
   */
  load(root: RootRef, key: string, make: () => Promise<V>): Promise<V> {
    const hit = this.get(root, key);
    if (hit !== undefined) return Promise.resolve(hit);
    const full = rootScope(root) + key;
    const running = this.#loading.get(full);
    if (running) return running;
    const p = make();
    this.#loading.set(full, p);
    const done = () => {
      if (this.#loading.get(full) !== p) return false;
      this.#loading.delete(full);
      return true;
    };
    p.then(
      (v) => {
        if (done()) this.set(root, key, v);
      },
      () => done(),
    );
    return p;
  }

  delete(root: RootRef, key: string): void {
    this.#lru.delete(rootScope(root) + key);
  }

  /** Forget everything about the root, every generation of it. */
  dropRoot(id: string): void {
    for (const k of this.#loading.keys()) if (k.startsWith(id + SEP)) this.#loading.delete(k);
    const keys = this.#byRoot.get(id);
    if (!keys) return;
    this.#byRoot.delete(id);
    for (const k of keys) this.#lru.delete(k);
  }

  /**
   * Forget every entry whose key (as given to `set`, without its root) passes `test`:
   * for entries about a second root (a diff's head), found when that root goes. A
   * walk of every entry, on a root's removal only.
   */
  dropWhere(test: (key: string) => boolean): void {
    const gone: string[] = [];
    for (const full of this.#lru.keys()) if (test(full.slice(full.indexOf(SEP, full.indexOf(SEP) + 1) + 1))) gone.push(full);
    for (const full of gone) this.#lru.delete(full);
  }

  get size(): number {
    return this.#lru.size;
  }

  /** Bytes charged for what is held now (at most maxBytes). */
  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  #unindex(full: string): void {
    const id = full.slice(0, full.indexOf(SEP));
    const keys = this.#byRoot.get(id);
    keys?.delete(full);
    if (keys?.size === 0) this.#byRoot.delete(id);
  }
}
