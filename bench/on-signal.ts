// A bench interrupted (Ctrl-C, a CI timeout) must not leave its daemon and its
// work dir behind: kill the one, remove the other, exit 130.
import { rmSync } from 'node:fs';
import type { Daemon } from '../test/helpers/daemon.js';

export function cleanUpOnSignal(daemon: Daemon, workDir: string): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      daemon.child.kill('SIGKILL');
      rmSync(workDir, { recursive: true, force: true });
      process.exit(130);
    });
  }
}
