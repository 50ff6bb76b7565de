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

/** `file:` URI of an absolute in-jail path. */
export function jailPathToFileUri(absPath: string): string {
  return 'file://' + absPath.split('/').map(encodeSegment).join('/');
}

/** `file:` URI of a root-relative path: what didOpen and every position request send. */
export function treeFileUri(rel: string): string {
  return jailPathToFileUri(treeJailPath(rel));
}

/**
 * Normalize an absolute POSIX path: collapse `//` and `.` segments. Returns
 * undefined for anything relative, holding a `..` segment, a control character, or
 * longer than MAX_PATH_CHARS. `..` is refused, not resolved: a server that names
 * `/src/../etc/passwd` is not to be helped along.
 */
export function normalizeJailPath(p: string): string | undefined {
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
  const decoded = percentDecode(rest); // once: a %252F stays a literal "%2F" in a name
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
  if (best) return join(best.host, p.slice(best.at.length));
  if (isUnder(p, TREE_AT)) return join(dirs.treeHostDir, p.slice(TREE_AT.length));
  if (dirs.depsHostDir !== undefined && isUnder(p, DEPS_AT)) return join(dirs.depsHostDir, p.slice(DEPS_AT.length));
  return undefined;
}
