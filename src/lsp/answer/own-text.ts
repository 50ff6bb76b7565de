// lspd's own text (the notes answers carry, error messages, readiness reasons) goes
// through the same scrubber as a server's output: it quotes what a tree gave (a
// compile database's arguments, host paths included) and what the host said (an
// errno naming a file under the data dir), and no answer may carry a host path.
import { homedir } from 'node:os';
import { PROJECT_DIR } from '../../jail/policy.js';
import { AppError } from '../../errors.js';
import { createScrubber, type Scrubber } from './scrub.js';

/** Host paths hidden wherever they appear: the data dir, the daemon's install dir, its HOME. */
export function knownHostPaths(dataDir: string): string[] {
  return [dataDir, PROJECT_DIR, homedir()];
}

/** A scrubber for text that is not about one root (a root's own also maps its tree dir: QueryService). */
export function ownTextScrubber(dataDir: string): Scrubber {
  return createScrubber({ knownPaths: knownHostPaths(dataDir) });
}

/** The same error with its message scrubbed (code, status and fields kept). */
export function scrubbedError(err: AppError, scrub: Scrubber): AppError {
  const message = scrub(err.message);
  return message === err.message ? err : new AppError(err.code, err.status, message, err.extra);
}
