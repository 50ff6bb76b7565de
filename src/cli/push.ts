// `lspd push`: upload a checkout's commit as a root. When the replica already
// holds a relative of the commit (the `--base` given, else the first of the
// merge-base with the default branch and HEAD~1..~10 that it answers GET for), only
// the change goes, as a layer over that root (git-delta.ts); a replica that lacks
// it after all answers 409 need_tree, and the whole tree goes instead. Each
// attempt streams a fresh archive (a stream can be sent once), gzip'd on the fly,
// so memory stays flat whatever the tree's size. Connection failures and 5xx
// answers are retried with exponential back-off (honouring Retry-After); any other
// 4xx is the daemon saying no, and is reported at once. The commit's git tree id
// goes along whenever the archive is the whole tree, so the daemon can refuse a
// tree that is not the commit's.
import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { LspdError, type LspdClient, type PutRootAnswer, type RootKey, type UploadOptions } from '../client/index.js';
import { archive, git } from './git.js';
import { baseCandidates, deltaArchive, deltaOf, treeFacts } from './git-delta.js';

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
  /** A commit (any rev) the replica holds as a root: send the change since it. */
  base?: string | undefined;
  /** Always send the whole tree. */
  full?: boolean | undefined;
  /** false (`--no-warm`): the daemon does not start the root's sessions on upload. */
  warm?: boolean | undefined;
}

export interface PushResult {
  answer: PutRootAnswer;
  /** Body bytes the successful attempt sent (gzip'd when gzip is on). */
  sentBytes: number;
  /** The root the commit was sent as a layer over, when it was. */
  base?: string;
}

export function backoffMs(retry: number, base: number, max: number, retryAfterS?: number): number {
  const exp = Math.min(max, base * 2 ** retry);
  // ±25% jitter, so CI jobs that failed together do not retry in lockstep.
  const jittered = exp * (0.75 + Math.random() * 0.5);
  return Math.max(jittered, Math.min(60_000, (retryAfterS ?? 0) * 1000));
}

export async function push(client: LspdClient, top: string, key: RootKey, opts: PushOptions): Promise<PushResult> {
  const note = opts.note ?? (() => {});
  // What the archive is, where a base is and what changed since it, looked for at once.
  const finding = opts.full ? undefined : opts.base !== undefined ? commitOf(top, opts.base) : findBase(client, top, key, note);
  const [facts, base, delta] = await Promise.all([
    treeFacts(top, key.sha),
    finding,
    finding?.then((b) => (b === undefined ? undefined : deltaOf(top, b, key.sha))),
  ]);
  const checked: UploadOptions = { gzip: opts.gzip, ...(facts.gitTree ? { gitTree: facts.gitTree } : {}) };
  if (!opts.full && facts.exportSubst) note('lspd: sending the whole tree: export-subst attributes rewrite files on every commit');
  else if (base !== undefined && delta !== undefined) {
    if ('fullBecause' in delta) note(`lspd: sending the whole tree: ${delta.fullBecause}`);
    else {
      try {
        const sent = await upload(client, key, () => deltaArchive(top, key.sha, delta, opts.gzip, facts.rawBlobs), { ...checked, base }, opts);
        return { ...sent, base };
      } catch (err) {
        if (!(err instanceof LspdError && err.status === 409 && err.body.need === 'tree')) throw err;
        note(`lspd: the daemon does not hold ${base.slice(0, 12)}; sending the whole tree`);
      }
    }
  }
  return upload(client, key, () => archive(top, key.sha, opts.gzip), checked, opts);
}

/** The whole tree, with retries (the answer only). */
export async function pushRoot(client: LspdClient, top: string, key: RootKey, opts: PushOptions): Promise<PutRootAnswer> {
  return (await push(client, top, key, { ...opts, full: true })).answer;
}

/** The first candidate base the daemon answers GET for; undefined when none (or it cannot be asked). */
async function findBase(client: LspdClient, top: string, key: RootKey, note: (line: string) => void): Promise<string | undefined> {
  for (const sha of await baseCandidates(top, key.sha)) {
    try {
      await client.getRoot({ ...key, sha });
      return sha;
    } catch (err) {
      if (err instanceof LspdError && err.status === 404) continue;
      note(`lspd: cannot look for a base on the daemon (${(err as Error).message}); sending the whole tree`);
      return undefined;
    }
  }
  return undefined;
}

async function commitOf(top: string, rev: string): Promise<string> {
  return git(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`], top);
}

/** One PUT with retries; counts the bytes of the attempt that succeeded. */
async function upload(client: LspdClient, key: RootKey, body: () => Readable, o: UploadOptions, opts: PushOptions): Promise<PushResult> {
  const base = opts.baseDelayMs ?? 500;
  const max = opts.maxDelayMs ?? 15_000;
  for (let attempt = 0; ; attempt++) {
    let sentBytes = 0;
    const counted = () => {
      const src = body();
      const out = new PassThrough();
      src.on('error', (err) => out.destroy(err));
      out.on('close', () => src.destroy());
      src.on('data', (c: Buffer) => (sentBytes += c.length));
      return src.pipe(out);
    };
    try {
      return {
        answer: await client.putRoot(key, counted, { ...o, ...(opts.shard ? { shard: opts.shard } : {}), ...(opts.warm === false ? { warm: false } : {}) }),
        sentBytes,
      };
    } catch (err) {
      const retryable = err instanceof LspdError && err.retryable;
      if (!retryable || attempt >= opts.retries) throw err;
      const wait = backoffMs(attempt, base, max, err.retryAfter);
      opts.note?.(`lspd: ${err.message} (${err.code}); retrying in ${(wait / 1000).toFixed(1)} s (${attempt + 1}/${opts.retries})`);
      await sleep(wait);
    }
  }
}
