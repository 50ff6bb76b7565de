// Real git repositories for the incremental-root tests: commit what is in a work
// dir, read a commit's tree id and archive as git makes them, and a file-by-file
// picture of a directory to compare a stored tree with.
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

const ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' };

export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...ENV } }).trim();
}

/** `git add -A && git commit`; the new commit's sha. */
export function commitAll(dir: string, message = 'change'): string {
  git(dir, 'add', '-A');
  git(dir, '-c', 'commit.gpgsign=false', 'commit', '-q', '--allow-empty', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

export function treeOf(dir: string, rev: string): string {
  return git(dir, 'rev-parse', `${rev}^{tree}`);
}

export function archiveOf(dir: string, rev: string): Buffer {
  return execFileSync('git', ['archive', '--format=tar', rev], { cwd: dir, maxBuffer: 1024 * 1024 * 1024 });
}

/** Every entry under `dir`: directories, files (mode and content) and symlinks (target). */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, p));
      if (st.isDirectory()) {
        out[p] = `dir ${(st.mode & 0o777).toString(8)}`;
        visit(p);
      } else if (st.isSymbolicLink()) out[p] = `symlink -> ${readlinkSync(join(dir, p))}`;
      else out[p] = `file ${(st.mode & 0o777).toString(8)} ${readFileSync(join(dir, p)).toString('base64')}`;
    }
  };
  visit('');
  return out;
}
