// The pool of host uids jails run as: one uid per live jail. RLIMIT_NPROC and
// signal permissions are per host uid, so jails sharing one would starve (or
// signal) each other whatever uid they have inside their user namespace. A uid
// returns to the pool only once every process of its jail is gone.
// Orgs share the pool fairly (src/tenancy/fair-share.ts): past its share an org's next
// jail is refused 503 busy while the others still get uids. The pool is fixed, so
// the rule never hands out more uids than it has.
import assert from 'node:assert/strict';
import { envName } from '../config.js';
import { errors } from '../errors.js';
import { FairShare, shareLimits } from '../tenancy/fair-share.js';

/** What one org needs to work: a session's jail and a fetch's at once. */
export const ORG_UID_FLOOR = 2;

/** Who a jail runs for when no org asked for it (the boot canary, `lspd jail`). Not a valid org name. */
export const DAEMON_ORG = '_lspd';

export interface UidPoolOptions {
  /** Per-org shares; default: shares off (first come, first served). */
  share?: { orgCap: number; reservePercent: number };
  /** Told of every refusal (metrics). */
  onRefused?: (org: string) => void;
}

export class UidPool {
  readonly #base: number;
  readonly #count: number;
  /** uid → the org its jail runs for. */
  readonly #used = new Map<number, string>();
  readonly #share: FairShare;
  readonly #onRefused: ((org: string) => void) | undefined;
  #next = 0;

  constructor(base: number, count: number, o: UidPoolOptions = {}) {
    assert.ok(Number.isSafeInteger(base) && base >= 1000, 'uid base');
    assert.ok(Number.isSafeInteger(count) && count >= 1 && base + count <= 0xfffffffe, 'uid count');
    this.#base = base;
    this.#count = count;
    this.#share = new FairShare(shareLimits(count, { orgCap: 0, reservePercent: 0, ...o.share, floor: ORG_UID_FLOOR }));
    this.#onRefused = o.onRefused;
  }

  get inUse(): number {
    return this.#used.size;
  }

  /** Every uid of the pool (for sweeps and tests). */
  contains(uid: number): boolean {
    return uid >= this.#base && uid < this.#base + this.#count;
  }

  /**
   * A free uid for a jail of `org`, round-robin so a just-released uid is the last
   * to be reused. Throws busy when all are taken or the org is past its share.
   */
  acquire(org: string = DAEMON_ORG): number {
    const why = this.#share.check(org);
    if (why !== undefined) {
      this.#onRefused?.(org);
      if (why === 'full') throw errors.busy('Every jail uid is in use; retry shortly.', 2);
      const past = why === 'cap' ? `its limit (${envName('orgJailUids')})` : 'its share: the other uids are kept for other orgs';
      throw errors.busy(`Org ${org} already runs ${this.#share.held(org)} jails, ${past}; retry shortly.`, 2);
    }
    for (let i = 0; i < this.#count; i++) {
      const uid = this.#base + ((this.#next + i) % this.#count);
      if (!this.#used.has(uid)) {
        assert.equal(this.#share.take(org), undefined);
        this.#used.set(uid, org);
        this.#next = (uid - this.#base + 1) % this.#count;
        return uid;
      }
    }
    assert.fail('uid pool: the share allowed a uid but none is free');
  }

  release(uid: number): void {
    const org = this.#used.get(uid);
    assert.ok(org !== undefined, `uid ${uid} released twice`);
    this.#used.delete(uid);
    this.#share.give(org);
  }
}
