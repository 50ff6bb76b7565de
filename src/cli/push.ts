// `lspd push`: upload a checkout's commit as a root. Each attempt runs a fresh
// `git archive` (a stream can be sent once), gzip'd on the fly, so memory stays
// flat whatever the tree's size. Connection failures and 5xx answers are retried
// with exponential back-off (honouring Retry-After); a 4xx is the daemon saying
// no, and is reported at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { LspdError, type LspdClient, type PutRootAnswer, type RootKey } from '../client/index.js';
import { archive } from './git.js';

export interface PushOptions {
  gzip: boolean;
  /** Retries after the first attempt. */
  retries: number;
  /** First back-off; doubles per retry, at most maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Progress lines (to stderr). */
  note?: (line: string) => void;
  /** For a spread repo: the route key to upload under (0 = `<org>/<repo>`). */
  shard?: number;
}

export function backoffMs(retry: number, base: number, max: number, retryAfterS?: number): number {
  const exp = Math.min(max, base * 2 ** retry);
  // ±25% jitter, so CI jobs that failed together do not retry in lockstep.
  const jittered = exp * (0.75 + Math.random() * 0.5);
  return Math.max(jittered, Math.min(60_000, (retryAfterS ?? 0) * 1000));
}

export async function pushRoot(client: LspdClient, top: string, key: RootKey, opts: PushOptions): Promise<PutRootAnswer> {
  const base = opts.baseDelayMs ?? 500;
  const max = opts.maxDelayMs ?? 15_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.putRoot(key, () => archive(top, key.sha, opts.gzip), { gzip: opts.gzip, ...(opts.shard ? { shard: opts.shard } : {}) });
    } catch (err) {
      const retryable = err instanceof LspdError && err.retryable;
      if (!retryable || attempt >= opts.retries) throw err;
      const wait = backoffMs(attempt, base, max, err.retryAfter);
      opts.note?.(`lspd: ${err.message} (${err.code}); retrying in ${(wait / 1000).toFixed(1)} s (${attempt + 1}/${opts.retries})`);
      await sleep(wait);
    }
  }
}
