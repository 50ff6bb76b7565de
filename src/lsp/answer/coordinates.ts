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
// - composer: `vendor/<vendor>/<package>/…` under the tree (SERVE binds the fetched
//   vendor/ there), but only when that vendor/composer/installed.json names the
//   package: a Go vendor/ dir or any other directory called vendor stays a tree
//   path. Version from installed.json through the caller's `readComposerVersion`.
// - Python: `/deps/python/…/site-packages/<top>/…`; the distribution owning <top>
//   (and its version) from the .dist-info RECORDs, through `readPythonDist`.
// - Cargo: CARGO_HOME (/deps/cargo) unpacks each crate at
//   `registry/src/<index>-<hash>/<name>-<version>/…`; a crate name has no `.`, so the
//   version starts at the first `-` followed by `<digits>.`
//   (https://doc.rust-lang.org/cargo/reference/manifest.html#the-name-field).
// - Rust's standard library: the toolchain's rust-src, `/usr/lib/rustlib/src/rust/
//   library/<crate>/…` (Debian: a link to /usr/src/rustc-<version>/, also accepted),
//   as `external` {module: core|alloc|std|…, version: the toolchain's}: the caller
//   gives the version (`rustSrcVersion`), since the linked path does not say it.
import { fileUriToJailPath, isUnder } from './paths.js';
import { CARGO_HOME_AT, DEPS_AT, GOMODCACHE_AT, PYTHON_DEPS_AT, RUST_SRC_AT, TREE_AT } from '../../jail/layout.js';

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
  ecosystem: 'go' | 'npm' | 'composer' | 'python' | 'cargo' | 'rust';
  /** Go module path, npm package name (`@scope/name`), composer `<vendor>/<package>` or Python distribution. */
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

/** A file under some vendor/<vendor>/<package>, waiting for installed.json to say whether it is one. */
export interface PendingComposer {
  kind: 'composer';
  /** Innermost first: each vendor dir that could hold it, with the name and path it would have. */
  candidates: { vendorDir: string; module: string; path: string }[];
  jailPath: string;
  /** What it is when no installed.json names it. */
  fallback: TreeCoordinate | OtherCoordinate;
}

/** A file in a fetched site-packages, waiting for its distribution. */
export interface PendingPython {
  kind: 'python';
  /** In-jail site-packages dir. */
  siteDir: string;
  /** Its first path segment there (an import package, or a module file). */
  top: string;
  path: string;
  jailPath: string;
}

export interface CoordinateOptions {
  /** Read `version` from `<dirInJail>/package.json`; undefined when unreadable. */
  readPackageVersion?: (dirInJail: string) => MaybePromise<string | undefined>;
  /** The version `<vendorDirInJail>/composer/installed.json` records for package `name`; undefined when it names none. */
  readComposerVersion?: (vendorDirInJail: string, name: string) => MaybePromise<string | undefined>;
  /** The distribution whose RECORD in `siteDirInJail` lists files under `top`. */
  readPythonDist?: (siteDirInJail: string, top: string) => MaybePromise<{ name: string; version: string } | undefined>;
  /** The version of the rust-src the server's toolchain has (e.g. 1.85.1); absent: "unknown". */
  rustSrcVersion?: string;
}

const other = (reason: OtherReason): OtherCoordinate => ({ kind: 'other', reason });

const GO_PATH_CHARS = /^[A-Za-z0-9._~/+-]+$/;
const GO_VERSION = /^v[0-9A-Za-z.+-]{1,127}$/;
const NPM_NAME_PART = /^[A-Za-z0-9~-][A-Za-z0-9._~-]{0,213}$/;
const NPM_VERSION = /^[0-9A-Za-z.+-]{1,64}$/;
/** Composer's package name rule (https://getcomposer.org/doc/04-schema.md#name), one side of the slash. */
const COMPOSER_NAME_PART = /^[a-z0-9](?:[_.-]?[a-z0-9]+|-{2}[a-z0-9]+)*$/;
const COMPOSER_VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,127}$/;
/** PEP 508 distribution names; PEP 440 versions (plus local labels). */
const PY_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;
const PY_VERSION = /^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}$/;

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

/** vendor/<vendor>/<package>/<file…> candidates in a tree path, innermost vendor dir first. */
function composerCandidates(segs: string[]): PendingComposer['candidates'] {
  const out: PendingComposer['candidates'] = [];
  for (let i = segs.length - 4; i >= 1; i--) {
    if (segs[i] !== 'vendor') continue;
    const [v, pkg] = [segs[i + 1]!, segs[i + 2]!];
    if (!COMPOSER_NAME_PART.test(v) || !COMPOSER_NAME_PART.test(pkg)) continue;
    out.push({ vendorDir: '/' + segs.slice(0, i + 1).join('/'), module: `${v}/${pkg}`, path: segs.slice(i + 3).join('/') });
  }
  return out;
}

const CRATE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const CRATE_VERSION = /^[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.+-]{1,100})?$/;
/** Names of the crates of Rust's library directory (rust-src): lower-case words. */
const STD_CRATE = /^[a-z][a-z0-9_-]{0,63}$/;
const RUST_VERSION = /^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.]{1,40})?$/;

/** <CARGO_HOME>/registry/src/<index>/<name>-<version>/<file…>; anything else of CARGO_HOME (caches, git checkouts) is not rendered. */
function classifyCargo(p: string): ExternalCoordinate | OtherCoordinate {
  const segs = p.slice(CARGO_HOME_AT.length + 1).split('/');
  if (segs[0] !== 'registry' || segs[1] !== 'src' || segs.length < 5) return other('outside');
  const dir = segs[3]!;
  const m = /^(.+?)-([0-9]+\..*)$/.exec(dir);
  if (!m || !CRATE_NAME.test(m[1]!) || !CRATE_VERSION.test(m[2]!)) return other('malformed');
  return { kind: 'external', ecosystem: 'cargo', module: m[1]!, version: m[2]!, path: segs.slice(4).join('/'), jailPath: p };
}

/** rust-src: <RUST_SRC_AT>/library/<crate>/<file…>, or Debian's /usr/src/rustc-<version>/library/<crate>/<file…>. */
function classifyRustSrc(p: string, version: string | undefined): ExternalCoordinate | OtherCoordinate {
  let segs: string[];
  let v = version;
  if (isUnder(p, RUST_SRC_AT)) segs = p.slice(RUST_SRC_AT.length + 1).split('/');
  else {
    const rest = p.slice(DEBIAN_RUST_SRC.length).split('/');
    v = rest[0]!;
    segs = rest.slice(1);
  }
  if (segs[0] !== 'library' || segs.length < 3 || !STD_CRATE.test(segs[1]!)) return other('toolchain');
  return {
    kind: 'external',
    ecosystem: 'rust',
    module: segs[1]!,
    version: v !== undefined && RUST_VERSION.test(v) ? v : 'unknown',
    path: segs.slice(2).join('/'),
    jailPath: p,
  };
}
const DEBIAN_RUST_SRC = '/usr/src/rustc-';

function classifyPython(p: string): PendingPython | OtherCoordinate {
  const segs = p.slice(1).split('/');
  const site = segs.indexOf('site-packages', PYTHON_DEPS_AT.split('/').length - 1);
  if (site < 0) return other('outside');
  if (site + 1 >= segs.length) return other('malformed');
  return { kind: 'python', siteDir: '/' + segs.slice(0, site + 1).join('/'), top: segs[site + 1]!, path: segs.slice(site + 1).join('/'), jailPath: p };
}

/**
 * Everything but the versions read from files, synchronously. Accepts a `file:`
 * URI or an absolute in-jail path; never throws.
 */
export function classify(
  uriOrPath: string,
  rustSrcVersion?: string,
): TreeCoordinate | ExternalCoordinate | PendingNpm | PendingComposer | PendingPython | OtherCoordinate {
  if (typeof uriOrPath !== 'string') return other('malformed');
  if (!uriOrPath.startsWith('/') && !/^file:/i.test(uriOrPath)) return other('not-file');
  const p = fileUriToJailPath(uriOrPath);
  if (p === undefined) return other('unsafe');
  const inTree = isUnder(p, TREE_AT);
  const inDeps = isUnder(p, DEPS_AT);
  if (!inTree && !inDeps && (isUnder(p, RUST_SRC_AT) || p.startsWith(DEBIAN_RUST_SRC))) return classifyRustSrc(p, rustSrcVersion);
  if (!inTree && !inDeps) return other(/typeshed|\/go\/src\/|golang\.org\/toolchain/.test(p) ? 'toolchain' : 'outside');
  // Go first: a module may ship a node_modules directory, and it is still the module's file.
  if (isUnder(p, GOMODCACHE_AT)) return p === GOMODCACHE_AT ? other('malformed') : classifyGo(p);
  if (isUnder(p, PYTHON_DEPS_AT)) return classifyPython(p);
  if (isUnder(p, CARGO_HOME_AT)) return p === CARGO_HOME_AT ? other('malformed') : classifyCargo(p);
  const segs = p.slice(1).split('/');
  const nm = segs.lastIndexOf('node_modules');
  if (nm >= 0) return classifyNpm(p, segs, nm);
  if (inTree) {
    const rel = p.slice(TREE_AT.length + 1);
    const tree: TreeCoordinate | OtherCoordinate = rel === '' ? other('malformed') : { kind: 'tree', path: rel, jailPath: p };
    const candidates = composerCandidates(segs);
    return candidates.length > 0 ? { kind: 'composer', candidates, jailPath: p, fallback: tree } : tree;
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

/** The first candidate an installed.json names, as an external coordinate; else the fallback. */
async function resolveComposer(c: PendingComposer, opts: CoordinateOptions): Promise<Coordinate> {
  for (const cand of opts.readComposerVersion ? c.candidates : []) {
    let v: string | undefined;
    try {
      v = await opts.readComposerVersion!(cand.vendorDir, cand.module);
    } catch {
      v = undefined;
    }
    if (v === undefined) continue;
    return {
      kind: 'external',
      ecosystem: 'composer',
      module: cand.module,
      version: typeof v === 'string' && COMPOSER_VERSION.test(v) ? v : 'unknown',
      path: cand.path,
      jailPath: c.jailPath,
    };
  }
  return c.fallback;
}

async function resolvePython(c: PendingPython, opts: CoordinateOptions): Promise<Coordinate> {
  let d: { name: string; version: string } | undefined;
  try {
    d = await opts.readPythonDist?.(c.siteDir, c.top);
  } catch {
    d = undefined;
  }
  const name = d && typeof d.name === 'string' && PY_NAME.test(d.name) ? d.name : c.top.replace(/\.pyi?$/, '');
  if (!PY_NAME.test(name)) return other('malformed');
  const version = d && typeof d.version === 'string' && PY_VERSION.test(d.version) ? d.version : 'unknown';
  return { kind: 'external', ecosystem: 'python', module: name, version, path: c.path, jailPath: c.jailPath };
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
    const c = classify(uriOrPath, opts.rustSrcVersion);
    let out: Promise<Coordinate>;
    if (c.kind === 'composer') out = resolveComposer(c, opts);
    else if (c.kind === 'python') out = resolvePython(c, opts);
    else if (c.kind !== 'npm') out = Promise.resolve(c);
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
