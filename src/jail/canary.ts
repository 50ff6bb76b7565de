// The boot canary (DESIGN.md "Two jail phases"): run jail/probe.c in a real jail of
// each phase and accept the phase only if the kernel answered as the design says:
//   both   Seccomp: 2 (a filter is loaded), no_new_privs, no effective capabilities,
//          a uid that is not 0, and a network namespace holding only lo
//   SERVE  socket(AF_INET) refused with EPERM; socketpair(AF_UNIX) allowed
//   FETCH  socket(AF_INET) given, and the egress forwarder listening on 127.0.0.1
// A helper that builds the wrong filter, a bwrap that cannot create namespaces, a
// missing proxy: each fails here, and the phase stays closed.
import type { PhaseVerdict } from '../health.js';
import { FETCH_PROXY_PORT, JAIL_PROBE } from './layout.js';
import type { JailExit, JailSpawnOptions, JailedProcess, Phase } from './types.js';

export interface ProbeResult {
  test: string;
  result: string;
  seccomp?: number;
  nnp?: number;
  capeff?: string;
  uid?: number;
  euid?: number;
  ifaces?: string[];
}

export interface ProbeRun {
  exit: JailExit;
  results: Map<string, ProbeResult>;
  stderr: string;
}

/** Run the probe with `tests` in a jail started by `spawn`, collecting its JSON lines. */
export async function runProbe(
  spawn: (o: JailSpawnOptions) => Promise<JailedProcess>,
  phase: Phase,
  tests: readonly string[],
  extra: Omit<JailSpawnOptions, 'phase' | 'argv'> = {},
): Promise<ProbeRun> {
  const j = await spawn({ ...extra, phase, argv: [JAIL_PROBE, ...tests] });
  j.stdin.end();
  let out = '';
  j.stdout.setEncoding('utf8');
  j.stdout.on('data', (d: string) => {
    if (out.length < 1 << 20) out += d;
  });
  const ended = new Promise<void>((resolve) => j.stdout.once('close', () => resolve()));
  const exit = await j.exited;
  // Once the gate has exited every process of the jail is gone, so stdout ends
  // promptly; the bound only guards against a leaked descriptor. It was 1 s, and on
  // a 2-core host at load 10 the probe's lines sometimes arrived after it.
  const drained = await Promise.race([ended.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000).unref())]);
  if (!drained) j.stdout.destroy();
  const results = new Map<string, ProbeResult>();
  for (const line of out.split('\n')) {
    try {
      const r = JSON.parse(line) as ProbeResult;
      if (typeof r.test === 'string') results.set(r.test, r);
    } catch {
      /* partial line */
    }
  }
  return { exit, results, stderr: j.stderrTail() };
}

export const CANARY_TESTS: Record<Phase, readonly string[]> = {
  serve: ['status', 'socket:inet', 'socketpair:unix'],
  // The in-jail forwarder listening is what makes HTTPS_PROXY work: prove it too.
  fetch: ['status', 'socket:inet', `connect:127.0.0.1:${FETCH_PROXY_PORT}`],
};

/** The verdict on one phase from its probe run. */
export function judge(phase: Phase, run: ProbeRun): PhaseVerdict {
  const fail = (reason: string): PhaseVerdict => ({ ok: false, reason });
  const st = run.results.get('status');
  if (!st) {
    const said = run.stderr.trim().split('\n').pop();
    return fail(`the probe did not run in the ${phase} jail (exit ${run.exit.code ?? run.exit.signal}${said ? `: ${said}` : ''})`);
  }
  if (st.seccomp !== 2) return fail(`no seccomp filter in the jail (Seccomp: ${st.seccomp})`);
  if (st.nnp !== 1) return fail('no_new_privs is not set in the jail');
  if (!/^0+$/.test(st.capeff ?? '')) return fail(`the jail holds capabilities (CapEff ${st.capeff})`);
  if (st.uid === 0 || st.euid === 0) return fail('the jail runs as uid 0');
  const ifaces = st.ifaces ?? [];
  if (ifaces.length !== 1 || ifaces[0] !== 'lo') return fail(`the jail shares a network: interfaces ${ifaces.join(', ') || 'none'}, not only lo`);
  const inet = run.results.get('socket:inet')?.result;
  if (phase === 'serve') {
    if (inet !== 'EPERM') return fail(`SERVE was given a socket (socket(AF_INET): ${inet ?? 'no answer'}): the filter is not the SERVE filter`);
    const pair = run.results.get('socketpair:unix')?.result;
    if (pair !== 'ok') return fail(`SERVE refuses socketpair(AF_UNIX) (${pair ?? 'no answer'}), which Node servers need`);
  } else if (inet !== 'ok') {
    return fail(`FETCH was refused a socket (socket(AF_INET): ${inet ?? 'no answer'})`);
  } else {
    const proxy = run.results.get(`connect:127.0.0.1:${FETCH_PROXY_PORT}`)?.result;
    if (proxy !== 'ok') return fail(`FETCH cannot reach its egress forwarder on 127.0.0.1:${FETCH_PROXY_PORT} (${proxy ?? 'no answer'})`);
  }
  if (run.exit.code !== 0) return fail(`the probe exited ${run.exit.code ?? run.exit.signal}`);
  return { ok: true };
}
