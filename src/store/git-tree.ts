// Git object ids of a stored tree, so a root can be proved to be the commit it is
// named after: each file's blob id (computed by the writer thread as it writes the
// file, write-worker.js) and the root's tree id, built here from those the way git
// builds tree objects. https://git-scm.com/book/en/v2/Git-Internals-Git-Objects
// - blob id: sha1 of "blob <size>\0" + content; a symlink is a blob of its target;
// - tree object: "tree <len>\0" then, per entry, "<mode> <name>\0" + 20-byte id, with
//   modes 100644 (file), 100755 (executable), 120000 (symlink), 40000 (directory);
// - entries sorted by name bytes, a directory compared as if its name ended in '/'
//   (git's base_name_compare), so "a.b" sorts before the directory "a" ("a/");
// - a directory without files does not exist in git: empty directories are left out.
// Only SHA-1 repositories (git's default object format) are covered.
import { createHash } from 'node:crypto';
import { nextTurn, turnCounter } from '../util/event-loop.js';

export type GitFileMode = '100644' | '100755' | '120000';

export interface GitBlob {
  /** Root-relative, '/'-separated. */
  path: string;
  mode: GitFileMode;
  /** 40 hex digits. */
  id: string;
}

/** The header git hashes before a blob's content. */
export function blobHeader(size: number): string {
  return `blob ${size}\0`;
}

export function blobId(content: Buffer | string): string {
  const b = typeof content === 'string' ? Buffer.from(content) : content;
  return createHash('sha1').update(blobHeader(b.length)).update(b).digest('hex');
}

/** git's id of the empty tree (a root with no files at all). */
export const EMPTY_TREE_ID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

interface Dir {
  files: Map<string, { mode: GitFileMode; id: string }>;
  dirs: Map<string, Dir>;
}

const newDir = (): Dir => ({ files: new Map(), dirs: new Map() });

/** The tree id of a root holding exactly these blobs; in slices (event-loop.ts), as it runs on the daemon's loop. */
export async function treeId(blobs: Iterable<GitBlob>): Promise<string> {
  const due = turnCounter();
  const top = newDir();
  for (const b of blobs) {
    const segs = b.path.split('/');
    let d = top;
    for (let i = 0; i < segs.length - 1; i++) {
      const seg = segs[i]!;
      let next = d.dirs.get(seg);
      if (!next) d.dirs.set(seg, (next = newDir()));
      d = next;
    }
    d.files.set(segs[segs.length - 1]!, { mode: b.mode, id: b.id });
    if (due(b.path.length)) await nextTurn();
  }
  return (await hashDir(top, due)).toString('hex');
}

// Runs once per stored root over every file (40k in a 500 MB tree), so rows are
// strings until one buffer per directory is written: no Buffer per name or id.
const ASCII = /^[\x00-\x7f]*$/;

async function hashDir(d: Dir, due: (bytes?: number) => boolean): Promise<Buffer> {
  const rows: { key: string; head: string; id: string | Buffer }[] = [];
  let ascii = true;
  for (const [name, f] of d.files) {
    rows.push({ key: name, head: `${f.mode} ${name}\0`, id: f.id });
    ascii &&= ASCII.test(name);
    if (due(name.length)) await nextTurn();
  }
  for (const [name, sub] of d.dirs) {
    rows.push({ key: `${name}/`, head: `40000 ${name}\0`, id: await hashDir(sub, due) });
    ascii &&= ASCII.test(name);
  }
  // git compares bytes of UTF-8; JS strings compare UTF-16 code units, which agree for ASCII.
  if (ascii) rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  else {
    const keys = new Map(rows.map((r) => [r, Buffer.from(r.key)]));
    rows.sort((a, b) => Buffer.compare(keys.get(a)!, keys.get(b)!));
  }
  let len = 0;
  for (const r of rows) len += Buffer.byteLength(r.head) + 20;
  const body = Buffer.allocUnsafe(len);
  let off = 0;
  for (const r of rows) {
    off += body.write(r.head, off);
    off += typeof r.id === 'string' ? body.write(r.id, off, 'hex') : r.id.copy(body, off);
  }
  return createHash('sha1').update(`tree ${len}\0`).update(body).digest();
}
