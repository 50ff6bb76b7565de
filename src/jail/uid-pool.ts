// The pool of host uids jails run as: one uid per live jail. RLIMIT_NPROC and
// signal permissions are per host uid, so jails sharing one would starve (or
// signal) each other whatever uid they have inside their user namespace. A uid
// returns to the pool only once every process of its jail is gone.
import assert from 'node:assert/strict';
import { errors } from '../errors.js';

export class UidPool {
  readonly #base: number;
  readonly #count: number;
  readonly #used = new Set<number>();
  #next = 0;

  constructor(base: number, count: number) {
    assert.ok(Number.isSafeInteger(base) && base >= 1000, 'uid base');
    assert.ok(Number.isSafeInteger(count) && count >= 1 && base + count <= 0xfffffffe, 'uid count');
    this.#base = base;
    this.#count = count;
  }

  get inUse(): number {
    return this.#used.size;
  }

  /** Every uid of the pool (for sweeps and tests). */
  contains(uid: number): boolean {
    return uid >= this.#base && uid < this.#base + this.#count;
  }

  /** A free uid, round-robin so a just-released uid is the last to be reused. Throws busy when all are taken. */
  acquire(): number {
    for (let i = 0; i < this.#count; i++) {
      const uid = this.#base + ((this.#next + i) % this.#count);
      if (!this.#used.has(uid)) {
        this.#used.add(uid);
        this.#next = (uid - this.#base + 1) % this.#count;
        return uid;
      }
    }
    throw errors.busy('Every jail uid is in use; retry shortly.', 2);
  }

  release(uid: number): void {
    assert.ok(this.#used.delete(uid), `uid ${uid} released twice`);
  }
}
