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

/** The tree id of a root holding exactly these blobs. */
export function treeId(blobs: Iterable<GitBlob>): string {
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
  }
  return hashDir(top).toString('hex');
}

function hashDir(d: Dir): Buffer {
  const rows: { key: Buffer; head: Buffer; id: Buffer }[] = [];
  for (const [name, f] of d.files) {
    const n = Buffer.from(name);
    rows.push({ key: n, head: Buffer.from(`${f.mode} ${name}\0`), id: Buffer.from(f.id, 'hex') });
  }
  for (const [name, sub] of d.dirs) {
    rows.push({ key: Buffer.from(`${name}/`), head: Buffer.from(`40000 ${name}\0`), id: hashDir(sub) });
  }
  rows.sort((a, b) => Buffer.compare(a.key, b.key));
  const body = Buffer.concat(rows.flatMap((r) => [r.head, r.id]));
  return createHash('sha1').update(`tree ${body.length}\0`).update(body).digest();
}
