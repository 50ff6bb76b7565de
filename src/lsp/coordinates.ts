// Where a location a server named actually is: inside the uploaded tree (a
// root-relative path), inside a fetched dependency (ecosystem coordinate: module,
// version, path inside it), or anywhere else (`other`: toolchain stdlib, typeshed,
// virtual documents, /etc/passwd). API.md: "No host path ever leaves the daemon";
// only `tree` and `external` are ever rendered or read for previews.
//
// The server is a third party reading untrusted bytes, so its URIs are parsed by
// paths.fileUriToJailPath (one percent-decode, `..` refused, control characters
// refused) and every coordinate part is checked against what the ecosystem allows.
//
// Resolvers:
// - Go: GOMODCACHE (/deps/go/pkg/mod) holds `<escaped module>@<escaped version>/…`;
//   Go escapes upper-case letters as `!` + lower-case so the cache works on
//   case-insensitive file systems (https://pkg.go.dev/golang.org/x/mod/module#EscapePath).
//   `cache/` (zips and hashes) and `golang.org/toolchain@…` (a downloaded Go
//   toolchain, i.e. the stdlib) are not dependencies.
// - npm: the innermost `node_modules/<name>` or `node_modules/@scope/name` under the
//   tree or the deps (the innermost, so pnpm's `.pnpm/x@1/node_modules/x` and nested
//   installs name the package that owns the file). Its version comes from the
//   caller's `readPackageVersion(packageDirInJail)` (this module does no I/O) and is
//   checked before use; unknown is the literal "unknown", never a guess.
import { DEPS_AT, GOMODCACHE_AT, TREE_AT, fileUriToJailPath, isUnder } from './paths.js';

export type MaybePromise<T> = T | Promise<T>;

export interface TreeCoordinate {
  kind: 'tree';
  /** Root-relative, /-separated. */
  path: string;
  /** Normalized absolute in-jail path (for paths.hostPathOf). */
  jailPath: string;
}

export interface ExternalCoordinate {
  kind: 'external';
  ecosystem: 'go' | 'npm';
  /** Go module path or npm package name (`@scope/name`). */
  module: string;
  version: string;
  /** Path inside the module or package. */
  path: string;
  jailPath: string;
}

export type OtherReason = 'not-file' | 'unsafe' | 'toolchain' | 'outside' | 'malformed';
export interface OtherCoordinate {
  kind: 'other';
  /** Why it is not rendered; for logs and metrics, never for callers. */
  reason: OtherReason;
}

export type FileCoordinate = TreeCoordinate | ExternalCoordinate;
export type Coordinate = FileCoordinate | OtherCoordinate;

/** An npm location whose version is still to be read. */
export interface PendingNpm {
  kind: 'npm';
  module: string;
  path: string;
  jailPath: string;
  /** In-jail directory of the package (where its package.json is). */
  packageDir: string;
}

export interface CoordinateOptions {
  /** Read `version` from `<dirInJail>/package.json`; undefined when unreadable. */
  readPackageVersion?: (dirInJail: string) => MaybePromise<string | undefined>;
}

const other = (reason: OtherReason): OtherCoordinate => ({ kind: 'other', reason });

const GO_PATH_CHARS = /^[A-Za-z0-9._~/+-]+$/;
const GO_VERSION = /^v[0-9A-Za-z.+-]{1,127}$/;
const NPM_NAME_PART = /^[A-Za-z0-9~-][A-Za-z0-9._~-]{0,213}$/;
const NPM_VERSION = /^[0-9A-Za-z.+-]{1,64}$/;

/**
 * Undo Go's case escaping (`!x` → `X`). undefined for an invalid escape: a `!` not
 * followed by a lower-case letter, or an upper-case letter (never in escaped form).
 */
export function decodeGoEscaped(s: string): string | undefined {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c >= 'A' && c <= 'Z') return undefined;
    if (c === '!') {
      const n = s[i + 1];
      if (n === undefined || n < 'a' || n > 'z') return undefined;
      out += n.toUpperCase();
      i++;
    } else out += c;
  }
  return out;
}

function classifyGo(p: string): ExternalCoordinate | OtherCoordinate {
  const segs = p.slice(GOMODCACHE_AT.length + 1).split('/');
  if (segs[0] === 'cache') return other('outside');
  const at = segs.findIndex((s) => s.includes('@'));
  if (at < 0 || at === segs.length - 1) return other('malformed');
  const last = segs[at]!;
  const split = last.indexOf('@');
  const mod = decodeGoEscaped([...segs.slice(0, at), last.slice(0, split)].join('/'));
  const version = decodeGoEscaped(last.slice(split + 1));
  if (mod === undefined || version === undefined || !GO_PATH_CHARS.test(mod) || !GO_VERSION.test(version)) {
    return other('malformed');
  }
  if (mod === 'golang.org/toolchain') return other('toolchain');
  return { kind: 'external', ecosystem: 'go', module: mod, version, path: segs.slice(at + 1).join('/'), jailPath: p };
}

function classifyNpm(p: string, segs: string[], nm: number): PendingNpm | OtherCoordinate {
  const first = segs[nm + 1];
  if (first === undefined) return other('malformed');
  const scoped = first.startsWith('@');
  const nameSegs = scoped ? 2 : 1;
  const parts = segs.slice(nm + 1, nm + 1 + nameSegs);
  if (parts.length !== nameSegs) return other('malformed');
  if (scoped ? !NPM_NAME_PART.test(first.slice(1)) || !NPM_NAME_PART.test(parts[1]!) : !NPM_NAME_PART.test(first)) {
    return other('malformed'); // also `.bin`, `.pnpm`, `.package-lock.json`
  }
  const rest = segs.slice(nm + 1 + nameSegs);
  if (rest.length === 0) return other('malformed'); // the package directory itself
  return {
    kind: 'npm',
    module: parts.join('/'),
    path: rest.join('/'),
    jailPath: p,
    packageDir: '/' + segs.slice(0, nm + 1 + nameSegs).join('/'),
  };
}

/**
 * Everything but the npm version, synchronously. Accepts a `file:` URI or an
 * absolute in-jail path; never throws.
 */
export function classify(uriOrPath: string): TreeCoordinate | ExternalCoordinate | PendingNpm | OtherCoordinate {
  if (typeof uriOrPath !== 'string') return other('malformed');
  if (!uriOrPath.startsWith('/') && !/^file:/i.test(uriOrPath)) return other('not-file');
  const p = fileUriToJailPath(uriOrPath);
  if (p === undefined) return other('unsafe');
  const inTree = isUnder(p, TREE_AT);
  const inDeps = isUnder(p, DEPS_AT);
  if (!inTree && !inDeps) return other(/typeshed|\/go\/src\/|golang\.org\/toolchain/.test(p) ? 'toolchain' : 'outside');
  // Go first: a module may ship a node_modules directory, and it is still the module's file.
  if (isUnder(p, GOMODCACHE_AT)) return p === GOMODCACHE_AT ? other('malformed') : classifyGo(p);
  const segs = p.slice(1).split('/');
  const nm = segs.lastIndexOf('node_modules');
  if (nm >= 0) return classifyNpm(p, segs, nm);
  if (inTree) {
    const rel = p.slice(TREE_AT.length + 1);
    return rel === '' ? other('malformed') : { kind: 'tree', path: rel, jailPath: p };
  }
  return other('outside');
}

/** A checked package version, or "unknown". A throwing reader counts as unreadable. */
async function versionOf(dir: string, opts: CoordinateOptions): Promise<string> {
  if (!opts.readPackageVersion) return 'unknown';
  try {
    const v = await opts.readPackageVersion(dir);
    return typeof v === 'string' && NPM_VERSION.test(v) ? v : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Resolve one URI or path to its coordinate. */
export async function resolveCoordinate(uriOrPath: string, opts: CoordinateOptions = {}): Promise<Coordinate> {
  return createResolver(opts)(uriOrPath);
}

/**
 * A resolver for one answer: memoizes coordinates by URI and versions by package
 * directory, so 200 references into one package read its package.json once.
 */
export function createResolver(opts: CoordinateOptions = {}): (uriOrPath: string) => Promise<Coordinate> {
  const byUri = new Map<string, Promise<Coordinate>>();
  const versions = new Map<string, Promise<string>>();
  return (uriOrPath) => {
    const hit = byUri.get(uriOrPath);
    if (hit) return hit;
    const c = classify(uriOrPath);
    let out: Promise<Coordinate>;
    if (c.kind !== 'npm') out = Promise.resolve(c);
    else {
      let v = versions.get(c.packageDir);
      if (!v) versions.set(c.packageDir, (v = versionOf(c.packageDir, opts)));
      out = v.then((version) => ({ kind: 'external', ecosystem: 'npm', module: c.module, version, path: c.path, jailPath: c.jailPath }));
    }
    if (typeof uriOrPath === 'string') byUri.set(uriOrPath, out);
    return out;
  };
}

/** A stable key for dedupe and grouping: tree path, or module@version/path. */
export function coordinateKey(c: FileCoordinate): string {
  return c.kind === 'tree' ? `t:${c.path}` : `e:${c.ecosystem}:${c.module}@${c.version}/${c.path}`;
}
