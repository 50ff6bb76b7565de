// Parked gates: lspd-gate processes started before a jail needs one. Node's spawn()
// forks the whole daemon on its one thread (10-20 ms at a few hundred MB resident:
// fork copies the page tables of every page it has touched), so a cold query that
// spawned its own gate waited that long, and so did every other request on the
// daemon. A parked gate is already exec'd and blocked on its message pipe; taking one
// costs nothing. Its replacement is spawned once no jail is starting (every language
// server started has answered once): on a 2-core host a fork during a server's start
// takes CPU from it, and blocks the loop that reads its answers; nor in the moment
// after a start ends, while its first answer is projected and sent (StartingJails).
// A gate is root until its message names the jail's uid (jail/gate.c); nothing but
// the daemon holds its pipes.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from '../log.js';

/** The gate's descriptors: 0-2 stdio · 3 --json-status-fd · 4 --args · 5 --seccomp · 6 its message. */
export const GATE_STDIO_COUNT = 7;
export const GATE_MESSAGE_FD = 6;
/** How often a refill looks again for a moment when no jail is starting, and how long it waits for one at most. */
const REFILL_POLL_MS = 250;
const REFILL_WAIT_MS = 10_000;
/**
 * How long after a start ended the pool still counts it as starting. The end is the
 * server's first answer, and the query that waited for it still has to project and
 * send it (2-5 ms): measured, a poll that forked right then (TS 7's cold start is
 * about one poll long) cost that query 20 ms in 2 of 9 cold starts.
 */
export const AFTER_START_MS = 100;

/** Jails in their uncapped start (no first answer yet), and when the last start ended. */
export class StartingJails {
  private readonly jails = new Set<object>();
  private endedAt = -Infinity;

  add(jail: object): void {
    this.jails.add(jail);
  }

  /** The jail's start is over (its first answer, its cap, its exit); idempotent. */
  delete(jail: object, now = Date.now()): void {
    if (this.jails.delete(jail)) this.endedAt = now;
  }

  /** No jail is starting, nor ended its start within AFTER_START_MS: a moment for a fork. */
  quiet(now = Date.now()): boolean {
    return this.jails.size === 0 && now - this.endedAt >= AFTER_START_MS;
  }
}

export class GatePool {
  private readonly parked = new Set<ChildProcess>();
  private refillQueued = false;
  private closed = false;

  /** `size` gates are kept parked; 0 spawns each when it is needed. `idle`: a moment for a fork (StartingJails.quiet). */
  constructor(
    private readonly gatePath: string,
    private readonly size: number,
    private readonly log: Logger,
    private readonly idle: () => boolean = () => true,
  ) {}

  /** Park gates up to the pool's size, one per turn, from the next turn on. */
  refill(): void {
    this.queueRefill();
  }

  /** A gate for one jail: a parked one when there is one, else a new one. Its pipes hold the daemon's loop again. */
  take(): ChildProcess {
    const [parked] = this.parked;
    if (parked) this.parked.delete(parked);
    this.queueRefill(REFILL_POLL_MS);
    if (!parked) return this.start();
    holdLoop(parked, true);
    return parked;
  }

  /** Parked gates are killed: nothing has run in them. */
  close(): void {
    this.closed = true;
    for (const g of this.parked) g.kill('SIGKILL');
    this.parked.clear();
  }

  private start(): ChildProcess {
    const child = spawn(this.gatePath, [String(GATE_MESSAGE_FD)], {
      env: {},
      cwd: '/',
      detached: true,
      stdio: Array<'pipe'>(GATE_STDIO_COUNT).fill('pipe'),
    });
    // The far end of any of these can vanish at any moment (a set-up failure, a kill):
    // EPIPE/ECONNRESET then is expected, and an unhandled 'error' would crash the daemon.
    for (const s of child.stdio) s?.on('error', () => {});
    child.on('error', () => {});
    return child;
  }

  /**
   * One spawn per turn, from `delayMs` on, once no jail is starting (or REFILL_WAIT_MS
   * have passed): never on the path of the request that took a gate.
   */
  private queueRefill(delayMs = 0, since = Date.now()): void {
    if (this.refillQueued || this.closed || this.parked.size >= this.size) return;
    this.refillQueued = true;
    setTimeout(() => {
      this.refillQueued = false;
      if (this.closed || this.parked.size >= this.size) return;
      if (!this.idle() && Date.now() - since < REFILL_WAIT_MS) return this.queueRefill(REFILL_POLL_MS, since);
      const g = this.start();
      if (g.pid === undefined) {
        this.log.error({ gate: this.gatePath }, 'cannot park a jail gate; jails spawn their own');
        return;
      }
      this.parked.add(g);
      // A parked gate that dies on its own is dropped, not replaced: the next take() refills.
      g.once('exit', () => this.parked.delete(g));
      holdLoop(g, false);
      this.queueRefill();
    }, delayMs).unref();
  }
}

/** A parked gate must not keep a daemon (or a CLI run) alive; a taken one must. */
function holdLoop(g: ChildProcess, hold: boolean): void {
  if (hold) g.ref();
  else g.unref();
  for (const s of g.stdio) {
    const sock = s as Socket | null;
    if (hold) sock?.ref();
    else sock?.unref();
  }
}
