// The jail's public face. Everything that runs a third-party program (a language
// server, a dependency fetcher, the canary probe) goes through `Jail.spawn`.
import type { Readable, Writable } from 'node:stream';

/** The closed set of phases (DESIGN.md "Two jail phases"). Never a free-form setting. */
export type Phase = 'fetch' | 'serve';

export interface Bind {
  /** Host path (a directory or file the daemon controls). */
  host: string;
  /** Where it appears inside the jail. */
  at: string;
  /** Read-write; only ever a root's dependency dir in FETCH. Default read-only. */
  rw?: boolean;
}

export interface JailSpawnOptions {
  phase: Phase;
  /**
   * The org this jail works for: its uid (and a FETCH jail's egress connections)
   * count against that org's fair share. Absent: the daemon's own (the canary).
   */
  org?: string;
  /** argv[0] is an absolute path as seen inside the jail. */
  argv: string[];
  /** The whole environment inside the jail (the jail starts from --clearenv). */
  env?: Record<string, string>;
  /**
   * The uploaded tree, bound read-only by a directory fd the jail opens and checks
   * (--ro-bind-fd), so a path swapped after admission cannot redirect the mount.
   */
  tree?: {
    hostDir: string;
    at: string;
    /** The directory admitted earlier (e.g. lstat at upload); the opened fd must be this inode. */
    expect?: { dev: number | bigint; ino: number | bigint };
  };
  binds?: Bind[];
  /**
   * A system root (host dir, absolute, owned by root) whose /usr the jail sees in
   * place of the host's (policy.ts withSystemRoot): the Debian 13 root of a row whose
   * packages the host's C library cannot run. Chosen by a server row or a fetcher,
   * from configuration; never by a tree.
   */
  systemRoot?: string;
  cwd?: string;
  /** Bytes of stderr kept in the ring. */
  stderrRingBytes?: number;
  /**
   * Run this long (ms) at most without the per-jail CPU cap, until capCpu(): a
   * language server's start-up on every core (its org's CPU share still holds it).
   * Absent or 0: capped from the start.
   */
  uncappedStartMs?: number;
  /** Start at a low CPU weight among the org's jails until foreground() (cgroup.ts JailPlacement). */
  background?: boolean;
  /** Aborting kills the whole jail. */
  signal?: AbortSignal;
  /** Also see stderr live (the `lspd jail` CLI); the ring is kept either way. */
  onStderr?: (chunk: Buffer) => void;
}

export interface JailExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface JailedProcess {
  /** Host pid of the jail's process-group leader (lspd-gate, bwrap's parent and the jail's reaper). */
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** The last stderrRingBytes of stderr, host paths scrubbed. */
  stderrTail(): string;
  /** Settles when stderr has ended: its last bytes are then in the tail (they can arrive after stdout closed). */
  readonly stderrDone?: Promise<void>;
  /** Settles when the jail is gone (every process in it). */
  readonly exited: Promise<JailExit>;
  /** SIGKILL to the process group (and the cgroup), idempotent. */
  kill(): void;
  /** Memory the jail uses now (its cgroup's usage); undefined when it cannot be read. */
  memoryBytes?(): number | undefined;
  /** CPU ms used so far by each of its processes (proc-cpu.ts; undefined past its bound on processes read); compare two readings with cpuSpent. */
  cpuTimes?(): ReadonlyMap<number, number> | undefined;
  /** End an uncapped start (uncappedStartMs): the jail runs under its CPU cap from now on. Idempotent. */
  capCpu?(): void;
  /** End a background start: the jail gets the default CPU weight from now on. Idempotent. */
  foreground?(): void;
}

export interface Jail {
  spawn(opts: JailSpawnOptions): Promise<JailedProcess>;
}
