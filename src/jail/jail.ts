// The jail runtime main.ts creates once: host checks, both filters, cgroups, the
// uid pool, the FETCH egress proxy, and the boot canary whose verdicts gate every
// spawn. `spawn` refuses (503 not_ready) any phase the canary has not proved, so
// a route that forgot to check readiness still cannot start an unconfined process.
// There is no option that skips any of this.
import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { errors } from '../errors.js';
import type { PhaseVerdict } from '../health.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { CANARY_TESTS, judge, runProbe } from './canary.js';
import { openCgroups, type Cgroups, type CgroupVersion } from './cgroup.js';
import { createEgressProxy, type EgressProxy } from './egress-proxy.js';
import { JAIL_HOME, LSPD_AT } from './layout.js';
import { GATE_PATH, JAIL_INNER_UID, PROJECT_DIR, hostLayout, phasePolicy, type PhasePolicy } from './policy.js';
import { preflight } from './preflight.js';
import { buildFilter } from './seccomp.js';
import { GatePool, StartingJails } from './gates.js';
import { spawnInJail, type SpawnContext } from './spawn.js';
import type { Jail, JailSpawnOptions, JailedProcess, Phase } from './types.js';
import { DAEMON_ORG, UidPool } from './uid-pool.js';

export type JailVerdicts = { serve: PhaseVerdict; fetch: PhaseVerdict };

export interface JailRuntime extends Jail {
  /** Run the probe in both phases; only a passing verdict opens a phase for spawn. */
  canary(): Promise<JailVerdicts>;
  readonly verdicts: JailVerdicts;
  /** Which cgroup interface caps the jails (undefined when none is usable: then nothing runs). */
  readonly cgroupVersion: CgroupVersion | undefined;
  /** Whether jails get a CPU cap (LSPD_JAIL_CPU_MILLIS): the host delegates a CPU controller. */
  readonly cpuCapped: boolean;
  /** Stop the egress proxy and kill every live jail; later spawns are refused. */
  close(): Promise<void>;
}

export interface JailDeps {
  config: Config;
  log: Logger;
  metrics?: Metrics;
}

const PHASES: readonly Phase[] = ['serve', 'fetch'];
/** sockaddr_un.sun_path is 108 bytes, NUL included. unix(7). */
const MAX_SOCKET_PATH = 107;

export async function createJail({ config, log, metrics }: JailDeps): Promise<JailRuntime> {
  const problems: Partial<Record<Phase, string>> = {};
  const blockAll = (why: string) => {
    for (const p of PHASES) problems[p] ??= why;
  };
  const missing = preflight({ bwrapPath: config.bwrapPath, dataDir: config.dataDir });
  if (missing.length) blockAll(missing.join('; '));

  let cgroups: Cgroups | undefined;
  if (!missing.length) {
    try {
      cgroups = openCgroups(config.cgroupRoot);
      log.info({ cgroup: cgroups.version, cpuCapped: cgroups.cpuCapped }, 'jail cgroups');
      if (!cgroups.cpuCapped && config.jailCpuMillis > 0) log.warn('the host delegates no CPU controller: jails run without a CPU cap (LSPD_JAIL_CPU_MILLIS)');
    } catch (err) {
      blockAll((err as Error).message);
    }
  }

  const filters: Partial<Record<Phase, Buffer>> = {};
  for (const phase of PHASES) {
    if (problems[phase]) continue;
    try {
      filters[phase] = await buildFilter(config.jailHelperPath, phase);
    } catch (err) {
      problems[phase] = (err as Error).message;
    }
  }

  // The daemon's jail files: passwd/group/hosts for the jail's /etc, and a dir of
  // egress sockets, one per live FETCH jail (named by a sequence number). The
  // layout's own egressSocket is a placeholder each FETCH jail's policy replaces.
  const host = hostLayout(config.dataDir);
  const { etcDir } = host;
  const egressDir = join(config.dataDir, 'jail', 'egress');
  let egressSeq = 0;
  const egressSocket = () => join(egressDir, `${++egressSeq}.sock`);
  let egress: EgressProxy | undefined;
  if (!problems.serve || !problems.fetch) {
    try {
      prepareJailDir(config.dataDir, etcDir, egressDir);
    } catch (err) {
      blockAll(`cannot prepare the jail files under the data dir: ${(err as Error).message}`);
    }
  }
  if (!problems.fetch) {
    if (join(egressDir, `${Number.MAX_SAFE_INTEGER}.sock`).length > MAX_SOCKET_PATH) {
      problems.fetch = 'the egress proxy socket path is longer than a unix socket allows; use a shorter LSPD_DATA';
    } else {
      try {
        egress = createEgressProxy({
          allow: config.fetchRegistries,
          log: log.child({ mod: 'egress' }),
          share: { orgCap: config.orgMaxEgressConnections, reservePercent: config.orgReservePercent },
          onRefused: (org) => metrics?.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'egress' }),
        });
      } catch (err) {
        problems.fetch = `the egress proxy did not start: ${(err as Error).message}`;
      }
    }
  }

  const policies: Record<Phase, PhasePolicy> = { serve: phasePolicy('serve', host), fetch: phasePolicy('fetch', host) };
  const live = new Set<JailedProcess>();
  const starting = new StartingJails();
  const gates = new GatePool(GATE_PATH, config.jailParkedGates, log, () => starting.quiet());
  const ctx: SpawnContext | undefined =
    cgroups &&
    ({
      bwrapPath: config.bwrapPath,
      gates,
      filters: filters as Record<Phase, Buffer>,
      policies,
      uids: new UidPool(config.jailUidBase, config.jailUidCount, {
        share: { orgCap: config.orgJailUids, reservePercent: config.orgReservePercent },
        onRefused: (org) => metrics?.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'uids' }),
      }),
      cgroups,
      limits: {
        memoryBytes: config.jailMemoryBytes,
        pids: config.jailPids,
        cpuMillis: config.jailCpuMillis,
        cpuBurstMillis: config.jailCpuBurstMillis,
        tmpBytes: config.jailTmpBytes,
        stderrRingBytes: config.stderrRingBytes,
      },
      scrub: [
        [config.dataDir, '<data>'],
        [PROJECT_DIR, LSPD_AT],
        [homedir(), '~'],
      ],
      log,
      live,
      starting,
    } satisfies SpawnContext);
  if (ctx) gates.refill();

  const verdicts: JailVerdicts = {
    serve: { ok: false, reason: problems.serve ?? 'jail canary has not run' },
    fetch: { ok: false, reason: problems.fetch ?? 'jail canary has not run' },
  };
  const proved: Record<Phase, boolean> = { serve: false, fetch: false };
  let closed = false;

  /**
   * Spawn through the phase's policy; a FETCH jail first gets an egress socket of
   * its own (its connections counted for its org), bound where the policy's would
   * be and closed when the jail is gone.
   */
  const spawnPhase = async (c: SpawnContext, opts: JailSpawnOptions): Promise<JailedProcess> => {
    if (opts.phase !== 'fetch') return spawnInJail(c, opts);
    if (!egress) throw errors.notReady('The fetch jail has no egress proxy.');
    const listener = await egress.listen(egressSocket(), opts.org ?? DAEMON_ORG);
    try {
      const j = await spawnInJail(c, opts, phasePolicy('fetch', { ...host, egressSocket: listener.socketPath }));
      void j.exited.finally(() => listener.close());
      return j;
    } catch (err) {
      await listener.close();
      throw err;
    }
  };

  const setGauge = () => {
    for (const p of PHASES) metrics?.canary.set({ phase: p }, verdicts[p].ok ? 1 : 0);
  };
  setGauge();

  return {
    verdicts,
    cgroupVersion: cgroups?.version,
    cpuCapped: (cgroups?.cpuCapped ?? false) && config.jailCpuMillis > 0,

    async canary() {
      const started = performance.now();
      await Promise.all(
        PHASES.map(async (phase) => {
          proved[phase] = false;
          if (problems[phase] || !ctx) {
            verdicts[phase] = { ok: false, reason: problems[phase] ?? 'no cgroups' };
            return;
          }
          try {
            const run = await runProbe((o) => spawnPhase(ctx, o), phase, CANARY_TESTS[phase]);
            verdicts[phase] = judge(phase, run);
          } catch (err) {
            verdicts[phase] = { ok: false, reason: (err as Error).message };
          }
          proved[phase] = verdicts[phase].ok;
        }),
      );
      setGauge();
      const ms = Math.round(performance.now() - started);
      for (const p of PHASES) {
        if (verdicts[p].ok) log.info({ phase: p, ms, cgroup: cgroups?.version }, 'jail canary passed');
        else log.error({ phase: p, reason: verdicts[p].reason }, 'jail canary failed: nothing of this phase will run');
      }
      return { serve: { ...verdicts.serve }, fetch: { ...verdicts.fetch } };
    },

    async spawn(opts: JailSpawnOptions) {
      if (closed) throw errors.shuttingDown('lspd is shutting down.');
      if (!proved[opts.phase] || !ctx) {
        const v = verdicts[opts.phase];
        throw errors.notReady(`The ${opts.phase} jail is not proved: ${v.ok ? 'the canary has not passed' : v.reason}.`);
      }
      return spawnPhase(ctx, opts);
    },

    async close() {
      closed = true;
      proved.serve = proved.fetch = false;
      gates.close();
      const all = [...live];
      for (const j of all) j.kill();
      await Promise.race([Promise.all(all.map((j) => j.exited)), new Promise((r) => setTimeout(r, 5_000).unref())]);
      await egress?.close();
      cgroups?.close();
    },
  };
}

/**
 * Jails run as pool uids, and bwrap resolves the paths it binds as that uid: the data
 * dir must be searchable by others (0711: traverse, not list). Its parents are the
 * operator's; if one is closed, bwrap's refusal surfaces in the canary.
 */
function prepareJailDir(dataDir: string, etcDir: string, egressDir: string): void {
  mkdirSync(etcDir, { recursive: true, mode: 0o755 });
  // Sockets a killed daemon left behind name no live jail.
  rmSync(egressDir, { recursive: true, force: true });
  mkdirSync(egressDir, { mode: 0o755 });
  const mode = statSync(dataDir).mode & 0o7777;
  if ((mode & 0o001) === 0) chmodSync(dataDir, mode | 0o001);
  chmodSync(dirname(etcDir), 0o755);
  chmodSync(etcDir, 0o755);
  const id = JAIL_INNER_UID;
  writeFileSync(
    join(etcDir, 'passwd'),
    `root:x:0:0:root:/root:/usr/sbin/nologin\nlspd:x:${id}:${id}:lspd:${JAIL_HOME}:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    { mode: 0o644 },
  );
  writeFileSync(join(etcDir, 'group'), `root:x:0:\nlspd:x:${id}:\nnogroup:x:65534:\n`, { mode: 0o644 });
  writeFileSync(join(etcDir, 'hosts'), '127.0.0.1\tlocalhost lspd\n::1\tlocalhost ip6-localhost ip6-loopback\n', { mode: 0o644 });
}
