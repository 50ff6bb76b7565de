// Fair shares of one bounded resource between orgs (queued queries, sessions,
// jail uids, fetch slots, egress connections): pure bookkeeping, no I/O.
//
// The rule, for a pool of C units with a reserve R, when org X asks for one more:
//   - refused when all C are taken ('full'), or X already holds its fixed cap ('cap');
//   - granted when X holds less than the floor (what one org needs to work at all);
//   - granted when more than R units are free: an idle daemon lets one org use
//     everything but the reserve;
//   - else granted only while X holds less than C / (others + 2), `others` being the
//     orgs that hold a unit besides X: X's fair share with room for one newcomer.
//     Otherwise refused ('share').
// So a flooding org stops at C − R; an org that arrives gets the reserve at once
// (it holds less than any share), and while it is there the flooder cannot re-take
// a freed unit until it is back under its share: freed units go to the others.
// Units never exceed C, so this works for fixed pools (uids) as well as counters.
// Fairness is by units held, not by demand: an org that holds nothing is not
// counted, so a share never waits on an org that went away.
import assert from 'node:assert/strict';

export interface ShareLimits {
  /** C: units in all. */
  readonly capacity: number;
  /** R: free units an org past its share may not take (kept for a newcomer). */
  readonly reserve: number;
  /** Most units one org may hold, whatever is free. */
  readonly orgCap: number;
  /** Below this an org is refused only when nothing is free (what one org needs to work). */
  readonly floor: number;
}

export type ShareRefusal = 'full' | 'cap' | 'share';

/**
 * Limits from settings: `orgCap` 0 means no fixed cap (the share alone decides);
 * a fixed cap is never below the floor. The reserve is `reservePercent` of C, at
 * least 1 and at most C; a percentage of 0 turns shares off (R = 0: first come,
 * first served up to the fixed cap, which is what lspd did before shares).
 */
export function shareLimits(capacity: number, o: { orgCap: number; reservePercent: number; floor: number }): ShareLimits {
  assert.ok(Number.isSafeInteger(capacity) && capacity >= 1, 'share capacity');
  assert.ok(o.orgCap >= 0 && o.reservePercent >= 0 && o.floor >= 1, 'share settings');
  const floor = Math.min(o.floor, capacity);
  return Object.freeze({
    capacity,
    reserve: o.reservePercent === 0 ? 0 : Math.min(capacity, Math.max(1, Math.ceil((capacity * o.reservePercent) / 100))),
    orgCap: o.orgCap === 0 ? capacity : Math.min(capacity, Math.max(floor, o.orgCap)),
    floor,
  });
}

/**
 * May an org holding `held` units take one more, with `total` taken in all and
 * `others` other orgs holding at least one? undefined when yes, else why not.
 */
export function shareVerdict(l: ShareLimits, held: number, total: number, others: number): ShareRefusal | undefined {
  if (total >= l.capacity) return 'full';
  if (held >= l.orgCap) return 'cap';
  if (held < l.floor) return undefined;
  if (l.capacity - total > l.reserve) return undefined;
  return held < l.capacity / (others + 2) ? undefined : 'share';
}

/** Units held per org, taken and given back through the rule above. */
export class FairShare {
  readonly limits: ShareLimits;
  readonly #held = new Map<string, number>();
  #total = 0;

  constructor(limits: ShareLimits) {
    this.limits = limits;
  }

  get total(): number {
    return this.#total;
  }

  held(org: string): number {
    return this.#held.get(org) ?? 0;
  }

  /** Orgs holding at least one unit, other than `org`. */
  others(org: string): number {
    return this.#held.size - (this.#held.has(org) ? 1 : 0);
  }

  /** Would `org` get a unit now? undefined when yes. */
  check(org: string): ShareRefusal | undefined {
    return shareVerdict(this.limits, this.held(org), this.#total, this.others(org));
  }

  /** Take a unit for `org` if the rule allows; undefined when taken, else why not. */
  take(org: string): ShareRefusal | undefined {
    const why = this.check(org);
    if (why === undefined) {
      this.#held.set(org, this.held(org) + 1);
      this.#total++;
    }
    return why;
  }

  /** Give back one unit `org` took. Giving back what was never taken is a bug. */
  give(org: string): void {
    const n = this.held(org);
    // Not assert.ok(n > 0, message): that builds its message and a rest array on every call (twice a query).
    if (n <= 0) assert.fail(`fair share: ${org} gave back a unit it does not hold`);
    if (n === 1) this.#held.delete(org);
    else this.#held.set(org, n - 1);
    this.#total--;
  }

  /** Every org holding units, with how many (metrics). */
  entries(): IterableIterator<[string, number]> {
    return this.#held.entries();
  }
}

/** Orgs whose last turn OrgQueue remembers; past it the longest-ago are forgotten (they rank first either way). */
const MAX_REMEMBERED_TURNS = 4096;

/**
 * Items waiting per org, handed out round-robin between orgs (FIFO within one),
 * skipping orgs that may not take more now: one org's hundred queued items delay
 * another org's one by at most one turn. The turn goes to the org served longest
 * ago (never served first; ties by arrival), so an org whose queue ran empty and
 * refilled does not jump the others.
 */
export class OrgQueue<T> {
  readonly #queues = new Map<string, T[]>();
  /** Orgs with items, in the order their queue became non-empty. */
  #order: string[] = [];
  /** org → serial of its last turn; re-inserted on each, so the oldest come first. */
  readonly #served = new Map<string, number>();
  #serial = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(org: string, item: T): void {
    let q = this.#queues.get(org);
    if (!q) {
      q = [];
      this.#queues.set(org, q);
      this.#order.push(org);
    }
    q.push(item);
    this.#size++;
  }

  /** Remove one item; false when it was not queued. */
  remove(org: string, item: T): boolean {
    const q = this.#queues.get(org);
    const i = q ? q.indexOf(item) : -1;
    if (!q || i < 0) return false;
    q.splice(i, 1);
    this.#size--;
    if (q.length === 0) this.#drop(org);
    return true;
  }

  /** The next item of the org whose turn it is among those `may` accepts; undefined when none may take one. */
  next(may: (org: string) => boolean = () => true): { org: string; item: T } | undefined {
    let best: string | undefined;
    let bestTurn = Infinity;
    for (const org of this.#order) {
      const turn = this.#served.get(org) ?? 0;
      if (turn < bestTurn && may(org)) {
        best = org;
        bestTurn = turn;
      }
    }
    if (best === undefined) return undefined;
    const q = this.#queues.get(best)!;
    const item = q.shift()!;
    this.#size--;
    if (q.length === 0) this.#drop(best);
    this.#served.delete(best);
    this.#served.set(best, ++this.#serial);
    if (this.#served.size > MAX_REMEMBERED_TURNS) this.#served.delete(this.#served.keys().next().value!);
    return { org: best, item };
  }

  #drop(org: string): void {
    this.#queues.delete(org);
    this.#order = this.#order.filter((o) => o !== org);
  }
}
