// What `lspd push` learns from git to send a commit as a layer over a root the
// replica already has (PUT ...?base=, OCI whiteouts for deletions), and the
// commit's tree id for the daemon to check (x-lspd-git-tree). Only local git runs.
//
// The layer must give exactly what a full upload of `git archive <head>` gives, so:
// - a deleted path becomes a whiteout; when its directory is gone from the head
//   too (git has no empty directories, so neither has the archive), the topmost
//   such directory is whited out instead, and a directory replaced by a file
//   likewise;
// - git archive writes a file as a checkout would (attributes and config:
//   eol/autocrlf, filters such as git-lfs, ident, export-ignore). With no
//   attributes and no autocrlf the bytes are the blobs, read with one
//   `git cat-file --batch`; otherwise the layer's files come from
//   `git archive <head> -- <changed paths>`, converted as the full archive is;
// - export-subst rewrites files on every commit without a diff showing it, and a
//   changed .gitattributes can change unchanged files: either means a full upload;
// - the tree id is sent only when the archive is the tree: no conversion, no
//   export-ignore, no submodules (git archive leaves a gitlink an empty directory).
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { UsageError } from './git.js';

/** A changed path of the head: its git mode and object id. */
export interface DeltaFile {
  path: string;
  mode: string;
  id: string;
}

/** A layer as git describes it: whiteout paths (what they remove) and the head's changed paths. */
export interface Delta {
  whiteouts: string[];
  files: DeltaFile[];
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
  /** No attribute or setting converts anything: the archive's bytes are the blobs'. */
  rawBlobs: boolean;
}

/** What the commit's archive is, compared with its git tree. */
export async function treeFacts(top: string, sha: string): Promise<TreeFacts> {
  // One rev-parse and one config for five answers: every git process is a start-up paid per push.
  const [revParse, listing, config] = await Promise.all([
    gitRaw(['rev-parse', '--show-object-format', '--git-path', 'info/attributes', `${sha}^{tree}`], top),
    gitRaw(['ls-tree', '-r', '-z', '--full-tree', sha], top),
    gitRaw(['config', '--get-regexp', '^core\\.(autocrlf|attributesfile)$'], top).catch(() => ''),
  ]);
  const [format, infoAttributes, tree] = revParse.split('\n');
  const settings = new Map(
    config
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf(' ')).toLowerCase(), l.slice(l.indexOf(' ') + 1)] as const),
  );
  // A regex over the listing, not 40,000 split lines: submodules, and the attribute files' blobs.
  const gitlinks = /(?:^|\0)160000 /.test(listing);
  const attrBlobs = [...listing.matchAll(/(?:^|\0)\d+ blob ([0-9a-f]+)\t(?:[^\0]*\/)?\.gitattributes(?=\0|$)/g)].map((m) => m[1]!);
  const attributesFile = settings.get('core.attributesfile')?.replace(/^~(?=\/)/, homedir());
  const texts = await Promise.all([
    ...attrBlobs.map((id) => gitRaw(['cat-file', 'blob', id], top)),
    // git archive also reads the repository's info/attributes and the user's attributes file.
    ...[
      isAbsolute(infoAttributes!) ? infoAttributes! : join(top, infoAttributes!),
      attributesFile || join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'git', 'attributes'),
    ].map((f) => readFile(f, 'utf8').catch(() => '')),
  ]);
  const a = scanAttributes(texts);
  const autocrlf = settings.get('core.autocrlf') === 'true';
  const noTreeReason =
    format !== 'sha1'
      ? `the repository's object format is ${format}`
      : gitlinks
        ? 'the commit has submodules (git archive leaves them empty)'
        : a.exportIgnore || a.exportSubst
          ? 'export-ignore or export-subst attributes change what git archive sends'
          : a.converts || autocrlf
            ? 'attributes or core.autocrlf convert files as git archive writes them'
            : undefined;
  const facts = { exportSubst: a.exportSubst, rawBlobs: !a.any && !autocrlf };
  return noTreeReason ? { ...facts, noTreeReason } : { ...facts, gitTree: tree! };
}

export interface AttributeScan {
  /** Any attribute line at all. */
  any: boolean;
  exportIgnore: boolean;
  exportSubst: boolean;
  /** Attributes under which git archive writes other bytes than the blob's: filter, ident, eol=crlf, crlf, working-tree-encoding. */
  converts: boolean;
}

/** What attribute files set anywhere (comments and blank lines aside). */
export function scanAttributes(texts: string[]): AttributeScan {
  const out: AttributeScan = { any: false, exportIgnore: false, exportSubst: false, converts: false };
  for (const t of texts) {
    for (const line of t.split('\n')) {
      const l = line.trim();
      if (l === '' || l.startsWith('#')) continue;
      out.any = true;
      for (const attr of l.split(/\s+/).slice(1)) {
        const name = attr.replace(/^[-!]/, '').split('=')[0]!;
        if (name === 'export-ignore') out.exportIgnore = true;
        else if (name === 'export-subst') out.exportSubst = true;
        else if (name === 'filter' || name === 'ident' || name === 'crlf' || name === 'working-tree-encoding' || attr === 'eol=crlf') out.converts = true;
      }
    }
  }
  return out;
}

/**
 * Where a replica may already hold this commit's relatives, best first: the
 * merge-base with the default branch, then the first-parent ancestors HEAD~1..~10.
 */
export async function baseCandidates(top: string, sha: string): Promise<string[]> {
  const [def, ancestry] = await Promise.all([defaultBranch(top), gitRaw(['rev-list', '--first-parent', '--max-count=11', sha], top)]);
  const out: string[] = [];
  if (def) {
    const mb = (await gitRaw(['merge-base', def, sha], top).catch(() => '')).trim();
    if (mb && mb !== sha) out.push(mb);
  }
  for (const a of ancestry.split('\n').slice(1)) if (a && !out.includes(a)) out.push(a);
  return out;
}

/** origin's HEAD, else the first of origin/main, origin/master, main, master that exists (one git process). */
async function defaultBranch(top: string): Promise<string | undefined> {
  const order = ['refs/remotes/origin/HEAD', 'refs/remotes/origin/main', 'refs/remotes/origin/master', 'refs/heads/main', 'refs/heads/master'];
  const refs = (await gitRaw(['for-each-ref', '--format=%(refname)', ...order], top).catch(() => '')).split('\n');
  return order.find((r) => refs.includes(r));
}

/** The layer from `base` to `head`, or why a full upload is needed instead. */
export async function deltaOf(top: string, base: string, head: string): Promise<Delta | { fullBecause: string }> {
  // --raw: the same list as --name-status, with each new mode and blob id.
  const fields = nulList(await gitRaw(['diff', '--no-renames', '--no-ext-diff', '--raw', '--no-abbrev', '-z', base, head], top));
  const deleted: string[] = [];
  const files: DeltaFile[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    // ":<old mode> <new mode> <old id> <new id> <status>"
    const [, mode, , id, status] = fields[i]!.split(' ');
    const path = fields[i + 1]!;
    const name = path.slice(path.lastIndexOf('/') + 1);
    if (name.startsWith(WHITEOUT)) return { fullBecause: `${path} is named like a whiteout` };
    if (name === '.gitattributes') return { fullBecause: `${path} changed (it can change what git archive writes for other files)` };
    if (status === 'D') deleted.push(path);
    else if (status === 'A' || status === 'M' || status === 'T') files.push({ path, mode: mode!, id: id! });
    else return { fullBecause: `git diff reported status ${status} for ${path}` };
  }
  const pathspecBytes = files.reduce((n, f) => n + Buffer.byteLength(f.path) + 1, 0);
  if (pathspecBytes > MAX_PATHSPEC_BYTES) return { fullBecause: `${files.length} changed paths are too many for one layer` };
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
    if (Buffer.byteLength(WHITEOUT + gone.slice(gone.lastIndexOf('/') + 1)) > MAX_SEGMENT_BYTES)
      return { fullBecause: `the whiteout for ${gone} would be too long a name` };
    whiteouts.add(gone);
  }
  return { whiteouts: [...whiteouts], files };
}

/** The whiteout entry's name for a removed path: `dir/.wh.name`. */
export function whiteoutName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? WHITEOUT + path : `${path.slice(0, i)}/${WHITEOUT}${path.slice(i + 1)}`;
}

/**
 * The layer as a tar stream (gzip'd when asked): the whiteouts, then the changed
 * files: the blobs themselves when `rawBlobs` (TreeFacts), else what
 * `git archive <head> -- <paths>` writes for them. If git fails the stream errors
 * instead of ending, so the daemon (all or nothing) keeps none of it.
 */
export function deltaArchive(top: string, head: string, delta: Delta, gzip: boolean, rawBlobs: boolean): Readable {
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
    if (delta.files.length > 0 && rawBlobs) await copyBlobs(top, delta.files, pack, gone.signal);
    else if (delta.files.length > 0)
      await copyArchive(
        top,
        head,
        delta.files.map((f) => f.path),
        pack,
        gone.signal,
      );
    pack.finalize();
  })().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));
  const source: Readable = gzip ? pack.pipe(createGzip({ level: 6 })) : (pack as unknown as Readable);
  // pipe() does not forward errors: with gzip the pack's own (git stopped once the
  // upload was refused) would otherwise be unhandled and end the process.
  pack.on('error', (err: Error) => out.destroy(err));
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
    const child = spawn('git', ['--literal-pathspecs', 'archive', '--format=tar', head, '--', ...paths], {
      cwd: top,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString();
    });
    const ex = tar.extract();
    ex.on('entry', (h, stream, next) => {
      const sink = pack.entry({ name: h.name, type: h.type, mode: h.mode, size: h.size, linkname: h.linkname, mtime: h.mtime }, (err) =>
        err ? ex.destroy(err) : next(),
      );
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

/**
 * Every changed file from one `git cat-file --batch` (its answers come in request
 * order: "<id> <type> <size>\n", the bytes, "\n"), streamed into the pack. Modes as
 * git archive writes them; a submodule is an empty directory there, so here too.
 */
async function copyBlobs(top: string, files: DeltaFile[], pack: tar.Pack, signal: AbortSignal): Promise<void> {
  const child = spawn('git', ['cat-file', '--batch'], { cwd: top, stdio: ['pipe', 'pipe', 'pipe'], signal });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  exited.catch(() => {});
  child.stderr.resume();
  child.stdin.end(
    files
      .filter((f) => f.mode !== '160000')
      .map((f) => `${f.id}\n`)
      .join(''),
  );
  const reader = new ByteReader(child.stdout);
  for (const f of files) {
    if (f.mode === '160000') {
      await entry(pack, { name: `${f.path}/`, type: 'directory', mode: 0o755 }, Buffer.alloc(0));
      continue;
    }
    const [id, type, size] = (await reader.line()).split(' ');
    if (id !== f.id || type !== 'blob') throw new UsageError(`git cat-file answered ${JSON.stringify(`${id} ${type}`)} for ${f.path}`);
    const n = Number(size);
    if (f.mode === '120000') {
      await entry(pack, { name: f.path, type: 'symlink', linkname: (await reader.bytes(n)).toString('utf8'), mode: 0o777 }, Buffer.alloc(0));
    } else {
      await new Promise<void>((resolve, reject) => {
        const sink = pack.entry({ name: f.path, size: n, mode: f.mode === '100755' ? 0o755 : 0o644 }, (err) =>
          err ? reject(err) : resolve(),
        ) as unknown as EntrySink;
        reader.pipe(sink, n).then(() => sink.end(), reject);
      });
    }
    await reader.bytes(1); // the newline after each object
  }
  const code = await exited;
  if (code !== 0) throw new UsageError(`git cat-file failed (exit ${code})`);
}

/** A tar-stream pack entry, as written to (a streamx Writable). */
interface EntrySink {
  write(c: Buffer): boolean;
  once(ev: 'drain', fn: () => void): unknown;
  end(): unknown;
}

/** Lines and counted bytes off a stream, in order. */
class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private readonly it: AsyncIterator<Buffer>;
  constructor(src: Readable) {
    this.it = src[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }
  private async more(): Promise<void> {
    const r = await this.it.next();
    if (r.done) throw new UsageError('git cat-file ended early');
    this.buf = this.buf.length ? Buffer.concat([this.buf, r.value]) : r.value;
  }
  async line(): Promise<string> {
    let i: number;
    while ((i = this.buf.indexOf(10)) < 0) await this.more();
    const s = this.buf.toString('utf8', 0, i);
    this.buf = this.buf.subarray(i + 1);
    return s;
  }
  async bytes(n: number): Promise<Buffer> {
    while (this.buf.length < n) await this.more();
    const b = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return b;
  }
  /** The next `n` bytes into `sink`, honouring its back-pressure. */
  async pipe(sink: EntrySink, n: number): Promise<void> {
    while (n > 0) {
      if (this.buf.length === 0) await this.more();
      const c = this.buf.subarray(0, Math.min(n, this.buf.length));
      this.buf = this.buf.subarray(c.length);
      n -= c.length;
      if (!sink.write(c)) await new Promise<void>((resolve) => sink.once('drain', () => resolve()));
    }
  }
}
