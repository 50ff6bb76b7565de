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
/**
 * What an entry costs beside its value: its key's characters (two bytes each at
 * worst), its slot, the LRU's and the index's map entries (the root's id and
 * generation are shared by all its entries).
 */
const entryBytes = (key: string) => 2 * key.length + 128;

/** Prefix of a key about `root`, for callers that name a root inside their own keys: its id, then its generation. */
export function rootScope(root: RootRef): string {
  return `${root.id}${SEP}${root.generation}${SEP}`;
}

/** One entry's place: the LRU's key (an object: found by identity, nothing hashed) and how to unindex it. */
interface Slot {
  readonly id: string;
  readonly generation: string;
  readonly key: string;
}

export class RootCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<Slot, V>;
  /**
   * root id → generation → key → slot: a look-up hashes the query's strings, which
   * keep their hash, not one long root-scoped key built per look-up (issue 28); and
   * a removed root's entries go with its id.
   */
  readonly #byRoot = new Map<string, Map<string, Map<string, Slot>>>();
  /** Loads under way (`load`), by root-scoped key (made on a miss only): a second asker joins the first; settled ones are kept in the LRU, charged their size. */
  readonly #loading = new Map<string, Promise<V>>();

  constructor(opts: RootCacheOptions<V>) {
    this.#lru = new LRUCache<Slot, V>({
      max: opts.max,
      maxSize: opts.maxBytes,
      sizeCalculation: (v, slot) => Math.max(1, Math.ceil(opts.sizeOf(v)) + entryBytes(slot.key)),
      dispose: (_v, slot, reason) => {
        if (reason !== 'set') this.#unindex(slot); // 'set': replaced under the same key, still held
      },
    });
  }

  get(root: RootRef, key: string): V | undefined {
    const slot = this.#byRoot.get(root.id)?.get(root.generation)?.get(key);
    return slot && this.#lru.get(slot);
  }

  set(root: RootRef, key: string, value: V): void {
    let gens = this.#byRoot.get(root.id);
    if (!gens) this.#byRoot.set(root.id, (gens = new Map()));
    let keys = gens.get(root.generation);
    if (!keys) gens.set(root.generation, (keys = new Map()));
    let slot = keys.get(key);
    if (!slot) keys.set(key, (slot = { id: root.id, generation: root.generation, key }));
    this.#lru.set(slot, value);
    // An entry larger than maxBytes is not kept (nor disposed: it never was held).
    if (!this.#lru.has(slot)) this.#unindex(slot);
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
    const slot = this.#byRoot.get(root.id)?.get(root.generation)?.get(key);
    if (slot) this.#lru.delete(slot);
  }

  /** Forget everything about the root, every generation of it. */
  dropRoot(id: string): void {
    for (const k of this.#loading.keys()) if (k.startsWith(id + SEP)) this.#loading.delete(k);
    const gens = this.#byRoot.get(id);
    if (!gens) return;
    this.#byRoot.delete(id);
    for (const keys of gens.values()) for (const slot of keys.values()) this.#lru.delete(slot);
  }

  /**
   * Forget every entry whose key (as given to `set`, without its root) passes `test`:
   * for entries about a second root (a diff's head), found when that root goes. A
   * walk of every entry, on a root's removal only.
   */
  dropWhere(test: (key: string) => boolean): void {
    const gone: Slot[] = [];
    for (const slot of this.#lru.keys()) if (test(slot.key)) gone.push(slot);
    for (const slot of gone) this.#lru.delete(slot);
  }

  get size(): number {
    return this.#lru.size;
  }

  /** Bytes charged for what is held now (at most maxBytes). */
  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  #unindex(slot: Slot): void {
    const gens = this.#byRoot.get(slot.id);
    const keys = gens?.get(slot.generation);
    // Only this slot: a dropped root's slot is gone from the index already, and a later one may hold its key.
    if (keys?.get(slot.key) !== slot) return;
    keys.delete(slot.key);
    if (keys.size > 0) return;
    gens!.delete(slot.generation);
    if (gens!.size === 0) this.#byRoot.delete(slot.id);
  }
}
