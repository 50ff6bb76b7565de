// Moving between in-jail paths (the layout: src/jail/layout.ts), `file:` URIs and
// host paths.
//
// Paths are never trusted: `fileUriToJailPath` decodes percent-escapes exactly once
// and refuses `..` segments outright (rather than resolving them), NUL and other
// control characters, non-local authorities and anything that is not absolute.
import { join } from 'node:path';
import { DEPS_AT, NPM_DEPS_AT, TREE_AT } from '../../jail/layout.js';

/** URIs and paths longer than this are refused: no real file has one, and it bounds work. */
export const MAX_PATH_CHARS = 4096;

/** Where npm installs for workspace `rel` ('' or '.' for the tree's top) are found in the jail. */
export function npmModulesAt(workspaceRel: string): string {
  if (workspaceRel === '' || workspaceRel === '.') return `${NPM_DEPS_AT}/top/node_modules`;
  return `${NPM_DEPS_AT}/ws/${workspaceRel}/node_modules`;
}

/** In-jail absolute path of a root-relative path (already validated by schemas.relPath). */
export function treeJailPath(rel: string): string {
  return rel === '' || rel === '.' ? TREE_AT : `${TREE_AT}/${rel}`;
}

// vscode-uri (used by pyright and typescript-language-server) keeps only the
// unreserved characters and `/` unescaped; matching it makes our URIs byte-equal to
// the ones those servers echo back. https://www.rfc-editor.org/rfc/rfc3986#section-2.3
function encodeSegment(seg: string): string {
  return encodeURIComponent(seg).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** Paths made only of unreserved characters and `/`: their URI is the path itself (every query's document is one). */
const PLAIN_PATH = /^[A-Za-z0-9._~/-]*$/;

/** `file:` URI of an absolute in-jail path. */
export function jailPathToFileUri(absPath: string): string {
  if (PLAIN_PATH.test(absPath)) return 'file://' + absPath;
  return 'file://' + absPath.split('/').map(encodeSegment).join('/');
}

/** treeFileUri's answers: every query asks it of its document. A pure function's memo, bounded by the characters it holds. */
const treeUris = new Map<string, string>();
let treeUriChars = 0;
const TREE_URI_CHARS = 1 << 20;

/** `file:` URI of a root-relative path: what didOpen and every position request send. */
export function treeFileUri(rel: string): string {
  let uri = treeUris.get(rel);
  if (uri === undefined) {
    uri = jailPathToFileUri(treeJailPath(rel));
    if (treeUriChars + rel.length + uri.length > TREE_URI_CHARS) {
      treeUris.clear();
      treeUriChars = 0;
    }
    treeUris.set(rel, uri);
    treeUriChars += rel.length + uri.length;
  }
  return uri;
}

/**
 * Normalize an absolute POSIX path: collapse `//` and `.` segments. Returns
 * undefined for anything relative, holding a `..` segment, a control character, or
 * longer than MAX_PATH_CHARS. `..` is refused, not resolved: a server that names
 * `/src/../etc/passwd` is not to be helped along.
 */
export function normalizeJailPath(p: string): string | undefined {
  // What a server names is nearly always normal already (and a coordinate's jailPath
  // always is): one scan instead of a regex, a split and a join per location.
  if (isNormalPath(p)) return p;
  if (p.length === 0 || p.length > MAX_PATH_CHARS || p[0] !== '/') return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p)) return undefined;
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') return undefined;
    out.push(seg);
  }
  return '/' + out.join('/');
}

/**
 * Is `p` absolute and normal as it stands: no empty, `.` or `..` segment, no trailing
 * `/` (but `/` itself), no control character, at most MAX_PATH_CHARS? Exactly the
 * inputs normalizeJailPath returns unchanged.
 */
export function isNormalPath(p: string): boolean {
  const n = p.length;
  if (n === 0 || n > MAX_PATH_CHARS || p.charCodeAt(0) !== 47) return false;
  if (n === 1) return true;
  let seg = 1; // where the current segment starts
  for (let i = 1; i <= n; i++) {
    const c = i === n ? 47 : p.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
    if (c !== 47) continue;
    const len = i - seg;
    if (len === 0) return false;
    if (p.charCodeAt(seg) === 46 && (len === 1 || (len === 2 && p.charCodeAt(seg + 1) === 46))) return false;
    seg = i + 1;
  }
  return true;
}

/** Decode %XX escapes once; undefined when malformed or not UTF-8. */
export function percentDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

/**
 * The normalized in-jail path named by a `file:` URI or an absolute path, or
 * undefined when it is not a local file path we accept. Query and fragment are
 * dropped; `file://localhost/x` and `file:/x` are accepted (RFC 8089); any other
 * authority is refused (a UNC share is nothing inside the jail).
 */
export function fileUriToJailPath(uriOrPath: string): string | undefined {
  if (typeof uriOrPath !== 'string' || uriOrPath.length > MAX_PATH_CHARS * 3) return undefined;
  if (uriOrPath.startsWith('/')) return normalizeJailPath(uriOrPath);
  const m = /^file:(.*)$/is.exec(uriOrPath);
  if (!m) return undefined; // untitled:, https:, jdt:, a relative path, …
  let rest = m[1]!;
  const cut = rest.search(/[?#]/);
  if (cut >= 0) rest = rest.slice(0, cut);
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    const authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    if (authority !== '' && authority.toLowerCase() !== 'localhost') return undefined;
    rest = slash < 0 ? '' : rest.slice(slash);
  }
  const decoded = rest.includes('%') ? percentDecode(rest) : rest; // once: a %252F stays a literal "%2F" in a name
  if (decoded === undefined) return undefined;
  return normalizeJailPath(decoded);
}

/** Is `p` (normalized) `dir` itself or inside it? */
export function isUnder(p: string, dir: string): boolean {
  // Without building `dir + '/'`: projection asks this of every location and mount.
  return p.startsWith(dir) && (p.length === dir.length || dir.endsWith('/') || p.charCodeAt(dir.length) === 47); /* '/' */
}

/** Host directories backing the jail's binds, for one root. */
export interface HostDirs {
  /** The root's stored tree (bound at TREE_AT). */
  treeHostDir: string;
  /** The root's dependency cache (bound at DEPS_AT); absent when nothing was fetched. */
  depsHostDir?: string;
  /**
   * Binds laid over the tree or the deps (a fetched node_modules at
   * /src/<ws>/node_modules): an in-jail path under one is read from its host
   * directory, which lies inside depsHostDir.
   */
  mounts?: readonly { host: string; at: string }[];
  /**
   * Deps dirs of earlier roots some of `mounts` lie in while this root's own copy is
   * made (fetch/borrow.ts): the same deps-relative names as this root's.
   */
  lentDeps?: readonly string[];
}

/**
 * Host path behind an in-jail path under TREE_AT or DEPS_AT, for the caller to read
 * previews; undefined for anything else. The input is normalized here again, so a
 * `..` can never walk out of the host directory.
 */
export function hostPathOf(jailPath: string, dirs: HostDirs): string | undefined {
  const p = normalizeJailPath(jailPath);
  if (p === undefined) return undefined;
  // The deepest mount wins, as it does in the jail (binds are mounted parents first).
  let best: { host: string; at: string } | undefined;
  for (const m of dirs.mounts ?? []) if (isUnder(p, m.at) && (!best || m.at.length > best.at.length)) best = m;
  if (best) return under(best.host, p.slice(best.at.length));
  if (isUnder(p, TREE_AT)) return under(dirs.treeHostDir, p.slice(TREE_AT.length));
  if (dirs.depsHostDir !== undefined && isUnder(p, DEPS_AT)) return under(dirs.depsHostDir, p.slice(DEPS_AT.length));
  return undefined;
}

/** join(dir, rest) for the rest of a normal path: end to end when both are normal ('' or `/a/b`; the store's dirs always are). */
function under(dir: string, rest: string): string {
  return dir.length > 1 && (rest === '' || rest.charCodeAt(0) === 47) && isNormalPath(dir) ? dir + rest : join(dir, rest);
}
