// What `lspd push` learns from git to send a commit as a layer over a root the
// replica already has (PUT ...?base=, OCI whiteouts for deletions), and the
// commit's tree id for the daemon to check (x-lspd-git-tree). Only local git runs.
//
// The layer must give exactly what a full upload of `git archive <head>` gives, so:
// - its files come from `git archive <head> -- <changed paths>`: the same bytes,
//   modes, symlinks and export-ignore rules as the full archive;
// - a deleted path becomes a whiteout; when its directory is gone from the head
//   too (git has no empty directories, so neither has the archive), the topmost
//   such directory is whited out instead, and a directory replaced by a file
//   likewise;
// - export-subst rewrites files on every commit without a diff showing it, and a
//   changed .gitattributes can change what export-ignore leaves out of unchanged
//   files: either one means a full upload;
// - the tree id is sent only when the archive is the whole tree: no export-ignore
//   or export-subst, no submodules (git archive leaves a gitlink an empty directory).
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { UsageError } from './git.js';

/** A layer as git describes it: whiteout paths (what they remove) and the paths to archive. */
export interface Delta {
  whiteouts: string[];
  paths: string[];
}

/** git's arguments are one process's argv: past this, a full upload instead (Linux allows ~2 MiB in all). */
const MAX_PATHSPEC_BYTES = 1024 * 1024;
const MAX_SEGMENT_BYTES = 255;
const WHITEOUT = '.wh.';

function gitRaw(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, maxBuffer: 512 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return reject(new UsageError('git is not installed.'));
      reject(Object.assign(new UsageError(`git ${args[0]}: ${String(stderr).trim().split('\n')[0] ?? err.message}`), { exitCode: err.code }));
    });
  });
}

const nulList = (s: string) => s.split('\0').filter((x) => x !== '');

export interface TreeFacts {
  /** `<sha>^{tree}`, when a full archive of the commit is exactly that tree. */
  gitTree?: string;
  /** Why no tree id is sent (for the user). */
  noTreeReason?: string;
  /** export-subst: the archive differs per commit beyond its diff, so never a layer. */
  exportSubst: boolean;
}

/** What the commit's archive is, compared with its git tree. */
export async function treeFacts(top: string, sha: string): Promise<TreeFacts> {
  const format = (await gitRaw(['rev-parse', '--show-object-format'], top).catch(() => 'sha1')).trim();
  const ls = nulList(await gitRaw(['ls-tree', '-r', '-z', '--full-tree', sha], top));
  let gitlinks = false;
  const attrBlobs: string[] = [];
  for (const line of ls) {
    const tab = line.indexOf('\t');
    const [mode, , id] = line.slice(0, tab).split(' ');
    const path = line.slice(tab + 1);
    if (mode === '160000') gitlinks = true;
    if (path === '.gitattributes' || path.endsWith('/.gitattributes')) attrBlobs.push(id!);
  }
  const texts = await Promise.all(attrBlobs.map((id) => gitRaw(['cat-file', 'blob', id], top)));
  texts.push(...(await outsideAttributes(top)));
  const { ignore, subst } = exportAttributes(texts);
  const noTreeReason =
    format !== 'sha1'
      ? `the repository's object format is ${format}`
      : gitlinks
        ? 'the commit has submodules (git archive leaves them empty)'
        : ignore || subst
          ? 'export-ignore or export-subst attributes change what git archive sends'
          : undefined;
  if (noTreeReason) return { noTreeReason, exportSubst: subst };
  return { gitTree: (await gitRaw(['rev-parse', `${sha}^{tree}`], top)).trim(), exportSubst: false };
}

/** Whether attribute files set export-ignore or export-subst anywhere (comments aside). */
export function exportAttributes(texts: string[]): { ignore: boolean; subst: boolean } {
  let ignore = false;
  let subst = false;
  for (const t of texts) {
    for (const line of t.split('\n')) {
      if (line.trimStart().startsWith('#')) continue;
      if (/(^|\s)[-!]?export-ignore\b/.test(line)) ignore = true;
      if (/(^|\s)[-!]?export-subst\b/.test(line)) subst = true;
    }
  }
  return { ignore, subst };
}

/** Attribute files git archive reads beside the tree's own: the repository's info/attributes and the user's. */
async function outsideAttributes(top: string): Promise<string[]> {
  const files: string[] = [];
  const info = (await gitRaw(['rev-parse', '--git-path', 'info/attributes'], top)).trim();
  files.push(isAbsolute(info) ? info : join(top, info));
  const configured = (await gitRaw(['config', '--path', '--get', 'core.attributesFile'], top).catch(() => '')).trim();
  files.push(configured || join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'git', 'attributes'));
  return Promise.all(files.map((f) => readFile(f, 'utf8').catch(() => '')));
}

/**
 * Where a replica may already hold this commit's relatives, best first: the
 * merge-base with the default branch, then the first-parent ancestors HEAD~1..~10.
 */
export async function baseCandidates(top: string, sha: string): Promise<string[]> {
  const out: string[] = [];
  const def = await defaultBranch(top);
  if (def) {
    const mb = (await gitRaw(['merge-base', def, sha], top).catch(() => '')).trim();
    if (mb && mb !== sha) out.push(mb);
  }
  const ancestors = nulList((await gitRaw(['rev-list', '--first-parent', '--max-count=11', sha], top)).replace(/\n/g, '\0')).slice(1);
  for (const a of ancestors) if (!out.includes(a)) out.push(a);
  return out;
}

async function defaultBranch(top: string): Promise<string | undefined> {
  const head = (await gitRaw(['symbolic-ref', '-q', '--short', 'refs/remotes/origin/HEAD'], top).catch(() => '')).trim();
  if (head) return head;
  for (const ref of ['refs/remotes/origin/main', 'refs/remotes/origin/master', 'refs/heads/main', 'refs/heads/master']) {
    if (await gitRaw(['rev-parse', '--verify', '-q', ref], top).then(() => true, () => false)) return ref;
  }
  return undefined;
}

/** The layer from `base` to `head`, or why a full upload is needed instead. */
export async function deltaOf(top: string, base: string, head: string): Promise<Delta | { fullBecause: string }> {
  const fields = nulList(await gitRaw(['diff', '--no-renames', '--no-ext-diff', '--name-status', '-z', base, head], top));
  const deleted: string[] = [];
  const paths: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!;
    const path = fields[i + 1]!;
    const name = path.slice(path.lastIndexOf('/') + 1);
    if (name.startsWith(WHITEOUT)) return { fullBecause: `${path} is named like a whiteout` };
    if (name === '.gitattributes') return { fullBecause: `${path} changed (it can change what git archive leaves out)` };
    if (status === 'D') deleted.push(path);
    else if (status === 'A' || status === 'M' || status === 'T') paths.push(path);
    else return { fullBecause: `git diff reported status ${status} for ${path}` };
  }
  const pathspecBytes = paths.reduce((n, p) => n + Buffer.byteLength(p) + 1, 0);
  if (pathspecBytes > MAX_PATHSPEC_BYTES) return { fullBecause: `${paths.length} changed paths are too many for one layer` };
  const headDirs = new Set(deleted.length ? nulList(await gitRaw(['ls-tree', '-r', '-d', '-z', '--name-only', '--full-tree', head], top)) : []);
  const whiteouts = new Set<string>();
  for (const p of deleted) {
    // The topmost directory of `p` that the head no longer has goes as a whole.
    const segs = p.split('/');
    let gone = p;
    for (let i = 1; i < segs.length; i++) {
      const dir = segs.slice(0, i).join('/');
      if (!headDirs.has(dir)) {
        gone = dir;
        break;
      }
    }
    if (Buffer.byteLength(WHITEOUT + gone.slice(gone.lastIndexOf('/') + 1)) > MAX_SEGMENT_BYTES) return { fullBecause: `the whiteout for ${gone} would be too long a name` };
    whiteouts.add(gone);
  }
  return { whiteouts: [...whiteouts], paths };
}

/** The whiteout entry's name for a removed path: `dir/.wh.name`. */
export function whiteoutName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? WHITEOUT + path : `${path.slice(0, i)}/${WHITEOUT}${path.slice(i + 1)}`;
}

/**
 * The layer as a tar stream (gzip'd when asked): the whiteouts, then what
 * `git archive <head> -- <paths>` writes, entry by entry. If git fails the stream
 * errors instead of ending, so the daemon (all or nothing) keeps none of it.
 */
export function deltaArchive(top: string, head: string, delta: Delta, gzip: boolean): Readable {
  const pack = tar.pack();
  const out = new PassThrough();
  // The consumer went away (the upload failed): stop git.
  const gone = new AbortController();
  out.on('close', () => gone.abort());
  const fail = (err: Error) => {
    pack.destroy(err);
    out.destroy(err);
  };
  void (async () => {
    for (const w of delta.whiteouts) await entry(pack, { name: whiteoutName(w), size: 0, mode: 0o644 }, Buffer.alloc(0));
    if (delta.paths.length > 0) await copyArchive(top, head, delta.paths, pack, gone.signal);
    pack.finalize();
  })().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));
  const source: Readable = gzip ? pack.pipe(createGzip({ level: 6 })) : (pack as unknown as Readable);
  source.on('error', (err: Error) => out.destroy(err));
  source.pipe(out);
  return out;
}

function entry(pack: tar.Pack, header: Partial<tar.Header> & { name: string }, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => pack.entry(header, data, (err) => (err ? reject(err) : resolve())));
}

/** Re-pack every entry of `git archive head -- paths` (tar-stream consumes its global pax header, the commit id). */
function copyArchive(top: string, head: string, paths: string[], pack: tar.Pack, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    // --literal-pathspecs: a path holding *, ? or a leading : is a name, not a pattern.
    const child = spawn('git', ['--literal-pathspecs', 'archive', '--format=tar', head, '--', ...paths], { cwd: top, stdio: ['ignore', 'pipe', 'pipe'], signal });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString();
    });
    const ex = tar.extract();
    ex.on('entry', (h, stream, next) => {
      const sink = pack.entry({ name: h.name, type: h.type, mode: h.mode, size: h.size, linkname: h.linkname, mtime: h.mtime }, (err) => (err ? ex.destroy(err) : next()));
      stream.pipe(sink);
    });
    let parsed = false;
    let code: number | null | undefined;
    const settle = () => {
      if (!parsed || code === undefined) return;
      if (code === 0) resolve();
      else reject(new UsageError(`git archive failed: ${stderr.trim().split('\n')[0] || `exit ${code}`}`));
    };
    ex.on('finish', () => {
      parsed = true;
      settle();
    });
    ex.on('error', reject);
    child.on('error', reject);
    child.on('close', (c) => {
      code = c;
      if (c !== 0) parsed = true;
      settle();
    });
    child.stdout.pipe(ex);
  });
}
