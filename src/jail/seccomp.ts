// Builds the seccomp BPF program of each phase by running the native helper
// (jail/seccomp.c) once at boot. The bytes are kept, proved by the canary, and
// handed unchanged to every bwrap of that phase (`--seccomp FD`): the program that
// was proved is the program that runs.
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import type { Phase } from './types.js';

/** A classic BPF instruction (struct sock_filter) is 8 bytes; the kernel takes at most BPF_MAXINSNS of them. */
const INSN_BYTES = 8;
const BPF_MAXINSNS = 4096;

export class FilterError extends Error {
  override name = 'FilterError';
}

/** Run `helper <phase>` with an empty environment; resolve with the BPF bytes or reject saying why not. */
export async function buildFilter(helperPath: string, phase: Phase, timeoutMs = 5_000): Promise<Buffer> {
  try {
    await access(helperPath, constants.X_OK);
  } catch {
    throw new FilterError('the seccomp helper is missing or not executable (LSPD_JAIL_HELPER_PATH; build it with `make -C jail`)');
  }
  const out = await new Promise<Buffer>((resolve, reject) => {
    execFile(helperPath, [phase], { env: {}, encoding: 'buffer', timeout: timeoutMs, maxBuffer: BPF_MAXINSNS * INSN_BYTES }, (err, stdout, stderr) => {
      if (err) {
        const why = stderr.toString('utf8').trim().split('\n')[0] || err.message;
        reject(new FilterError(`the seccomp helper failed for ${phase}: ${why}`));
      } else resolve(stdout);
    });
  });
  if (out.length === 0 || out.length % INSN_BYTES !== 0 || out.length / INSN_BYTES > BPF_MAXINSNS) {
    throw new FilterError(`the seccomp helper printed ${out.length} bytes for ${phase}, not a BPF program`);
  }
  return out;
}
