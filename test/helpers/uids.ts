// The one place test files get jail uid ranges. Each test file runs in a process of
// its own (node --test), and two run side by side: ranges must be disjoint between
// processes (a jail test asserts "no process left of my uids", and a shared uid
// would let one file see, or kill, another's jailed processes) and between the
// daemons one file starts. Each process owns a block keyed by its pid and hands
// out consecutive ranges from it; pids alive at the same time differ, and their
// blocks differ unless the pids are 100,000 apart modulo pid_max, which two test
// processes started seconds apart are not.
const FIRST = 10_000_000;
const BLOCK = 4096;
const BLOCKS = 100_000;
let next = 0;

export interface UidRange {
  base: number;
  count: number;
}

/** A fresh range of `count` jail uids, disjoint from every other range handed out in any test process. */
export function jailUids(count = 64): UidRange {
  if (next + count > BLOCK) throw new Error(`test/helpers/uids.ts: this process asked for more than ${BLOCK} jail uids`);
  const base = FIRST + (process.pid % BLOCKS) * BLOCK + next;
  next += count;
  return { base, count };
}

/** The same, as the LSPD_JAIL_UID_* settings a daemon is started with. */
export function jailUidEnv(count = 64): { LSPD_JAIL_UID_BASE: string; LSPD_JAIL_UID_COUNT: string } {
  const r = jailUids(count);
  return { LSPD_JAIL_UID_BASE: String(r.base), LSPD_JAIL_UID_COUNT: String(r.count) };
}
