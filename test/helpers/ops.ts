// Helpers for the operations tests: a small in-memory tar, a tokens file, a git
// repository with a commit, and a runner for the `lspd` command (bin/lspd.js).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import tar from 'tar-stream';
import { hashToken, type TokensFile } from '../../src/tokens.js';
import { projectDir } from './daemon.js';

export const SHA1 = '1'.repeat(40);
export const SHA2 = '2'.repeat(40);

/** A tar of the given files (path → content), as one Buffer. */
export async function makeTar(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name, mode: 0o644 }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export interface TestToken {
  secret: string;
  name: string;
  orgs: '*' | string[];
  permissions: ('upload' | 'query' | 'delete' | 'read')[];
}

export function writeTokens(path: string, tokens: TestToken[]): void {
  const file: TokensFile = {
    tokens: tokens.map((t) => ({ name: t.name, sha256: hashToken(t.secret), orgs: t.orgs, permissions: t.permissions })),
  };
  writeFileSync(path, JSON.stringify(file, null, 2));
}

/** `git init` a repository in `dir` holding `files`, committed; returns the commit sha. */
export function gitRepo(dir: string, files: Record<string, string>): string {
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' },
    }).trim();
  git('init', '-q', '-b', 'main');
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  git('add', '-A');
  git('-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'test commit');
  return git('rev-parse', 'HEAD');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `bin/lspd.js args...` in `cwd` with extra env; resolves when it exits. */
export function runCli(args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(projectDir, 'bin', 'lspd.js'), ...args], {
      cwd: opts.cwd ?? projectDir,
      env: { ...process.env, LSPD_URL: '', LSPD_TOKEN: '', LSPD_ORG: '', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`lspd ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Wait until `pred` holds, polling; throws after `timeoutMs`. */
export async function until(pred: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
