// What the CLI learns from a git checkout: the commit (HEAD or --sha, resolved
// to its full hex name, since the daemon refuses branch names), the org and repo
// (from flags, else the origin remote, else the directory name), and the tree
// itself as a `git archive` tar stream, gzip'd on the fly. Only local git runs
// here: the daemon never sees a git credential or makes a git request.
import { execFile, spawn } from 'node:child_process';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { createGzip } from 'node:zlib';
import { promisify } from 'node:util';
import { NAME_RE, type RootKey } from '../api/schemas.js';

const run = promisify(execFile);

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Run git and answer its trimmed output; a failure is a UsageError with git's first line. */
export async function git(args: string[], cwd: string, maxBuffer = 1024 * 1024): Promise<string> {
  try {
    const { stdout } = await run('git', args, { cwd, maxBuffer });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; code?: string };
    if (e.code === 'ENOENT') throw new UsageError('git is not installed.');
    throw new UsageError(`git ${args[0]}: ${(e.stderr ?? String(err)).trim().split('\n')[0]}`);
  }
}

/** org and repo from a remote URL (scp-like, ssh://, https://): its last two path segments. */
export function parseRemote(url: string): { org: string; repo: string } | undefined {
  const path = /^[^/:]+@[^/:]+:(.+)$/.exec(url)?.[1] ?? (URL.canParse(url) ? new URL(url).pathname : undefined);
  if (!path) return undefined;
  const segs = path
    .replace(/\.git\/?$/, '')
    .split('/')
    .filter(Boolean);
  if (segs.length < 2) return undefined;
  return { org: segs[segs.length - 2]!, repo: segs[segs.length - 1]! };
}

export interface KeyFlags {
  org?: string | undefined;
  repo?: string | undefined;
  sha?: string | undefined;
}

/** The checkout's top directory and the root key to use for it. */
export async function rootKeyOf(dir: string, flags: KeyFlags, defaultOrg?: string): Promise<{ top: string; key: RootKey }> {
  const top = await git(['rev-parse', '--show-toplevel'], dir).catch(() => {
    throw new UsageError(`${dir} is not inside a git checkout.`);
  });
  // rev-parse resolves HEAD, a short sha or a tag to the full commit name: the
  // daemon keys roots by full sha only.
  const rev = flags.sha ?? 'HEAD';
  const sha = await git(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`], top).catch(() => {
    throw new UsageError(rev === 'HEAD' ? 'The checkout has no commit yet.' : `No commit named ${JSON.stringify(rev)}.`);
  });
  let remote: { org: string; repo: string } | undefined;
  if (!flags.org || !flags.repo) {
    const url = await git(['remote', 'get-url', 'origin'], top).catch(() => '');
    remote = url ? parseRemote(url) : undefined;
  }
  const org = flags.org ?? remote?.org ?? defaultOrg;
  const repo = flags.repo ?? remote?.repo ?? basename(top);
  if (!org) throw new UsageError('No org: pass --org (or set LSPD_ORG); the checkout has no origin remote to derive it from.');
  for (const [what, v] of [
    ['org', org],
    ['repo', repo],
  ] as const) {
    if (!NAME_RE.test(v) || v === '.' || v === '..')
      throw new UsageError(`${what} ${JSON.stringify(v)} is not a valid name (letters, digits, . _ -): pass --${what}.`);
  }
  return { top, key: { org, repo, sha } };
}

/**
 * `git archive --format=tar <sha>` as a stream, gzip'd on the fly when asked.
 * If git fails the stream errors instead of ending, so the upload is cut short
 * and the daemon (all or nothing) keeps none of it.
 */
export function archive(top: string, sha: string, gzip: boolean): Readable {
  const child = spawn('git', ['archive', '--format=tar', sha], { cwd: top, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = new PassThrough();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString();
  });
  const source: Readable = gzip ? child.stdout.pipe(createGzip({ level: 6 })) : child.stdout;
  // End `out` only once git has exited 0: a tar that ends early must not look complete.
  source.pipe(out, { end: false });
  let sourceEnded = false;
  let exitCode: number | null | undefined;
  const finish = () => {
    if (!sourceEnded || exitCode === undefined) return;
    if (exitCode === 0) out.end();
    else out.destroy(new UsageError(`git archive failed: ${stderr.trim().split('\n')[0] ?? `exit ${exitCode}`}`));
  };
  source.on('end', () => {
    sourceEnded = true;
    finish();
  });
  source.on('error', (err) => out.destroy(err));
  child.on('error', (err) => out.destroy(err));
  child.on('close', (code) => {
    exitCode = code;
    if (code !== 0) sourceEnded = true;
    finish();
  });
  // The consumer went away (upload failed): stop git.
  out.on('close', () => {
    if (child.exitCode === null) child.kill();
  });
  return out;
}
