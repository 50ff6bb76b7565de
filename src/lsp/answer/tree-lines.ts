// The I/O behind projection's `ReadLines` and the coordinate readers (npm's
// package.json version, composer's installed.json, Python's .dist-info): lines of
// tree and dependency files, read on the host through paths.hostPathOf (which
// refuses anything outside the root's tree and deps dirs) and only when they
// resolve inside them (a fetched archive may hold links). Roots are immutable, so
// what is read is cached, bounded by count and by the bytes it holds, keyed by
// the root's identity and generation (a re-upload under the same key has the same
// host paths) and dropped with the root; the dependency indexes are also dropped
// when the root's fetch ends (installed.json and site-packages appear then).
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { FileCoordinate, MaybePromise } from './coordinates.js';
import { splitLines } from '../wire/encoding.js';
import { RootCache, type RootRef } from '../../store/root-cache.js';
import { hostPathOf, type HostDirs } from './paths.js';

/** Files larger than this get no previews (bundles, generated code). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** installed.json and RECORD files larger than this are not read (coordinates say "unknown"). */
const MAX_INDEX_BYTES = 32 * 1024 * 1024;
/** Most .dist-info dirs read in one site-packages. */
const MAX_DISTS = 5000;

type Dist = { name: string; version: string };
/** A dependency's package.json read for its version: larger ones are not parsed (a tree's vendored one can be anything). */
const MAX_PACKAGE_JSON_BYTES = 1024 * 1024;
/**
 * What one line costs held in an array beside its characters (pointer, string
 * header): a file of 8 MiB newlines is 8 M lines, ~300 MiB of heap, not 8 MiB,
 * and the cache's byte bound must count that or it holds many times its size.
 */
const LINE_OVERHEAD_BYTES = 40;

/** What an index entry (a name and what it maps to, in a Map) costs beside its characters. */
const MAP_ENTRY_BYTES = 80;
/** Most bytes of dependency indexes (composer's, Python's) kept, each. */
const INDEX_CACHE_BYTES = 16 * 1024 * 1024;

/** Heap of lines held in an array: two bytes a character at worst (V8 keeps non-Latin-1 text as UTF-16), and the line's own overhead. */
export function linesBytes(lines: readonly string[]): number {
  let n = 0;
  for (const l of lines) n += l.length * 2 + LINE_OVERHEAD_BYTES;
  return n;
}

const mapBytes = (m: Map<string, string | Dist>) => {
  let n = 0;
  for (const [k, v] of m) n += 2 * k.length + MAP_ENTRY_BYTES + (typeof v === 'string' ? 2 * v.length : 2 * (v.name.length + v.version.length) + 64);
  return n;
};

export class TreeLines {
  private readonly files: RootCache<string[]>;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  /** installed.json by root and host path: package name → version. */
  private readonly composerIndex = new RootCache<Map<string, string>>({ max: 64, maxBytes: INDEX_CACHE_BYTES, sizeOf: mapBytes });
  /** site-packages by root and host path: first path segment → distribution. */
  private readonly pythonIndex = new RootCache<Map<string, Dist>>({ max: 64, maxBytes: INDEX_CACHE_BYTES, sizeOf: mapBytes });

  /** `maxBytes`: most bytes of lines held (LSPD_FILE_CACHE_BYTES's share). */
  constructor(maxBytes: number) {
    this.files = new RootCache<string[]>({ max: 512, maxBytes, sizeOf: linesBytes });
  }

  /** Bytes charged for what is held (lines and dependency indexes). */
  get bytes(): number {
    return this.files.bytes + this.composerIndex.bytes + this.pythonIndex.bytes;
  }

  /**
   * A ReadLines for one root: lines already held are given at once (no promise), the
   * rest read. One projection asks for a file's spans one after another (a
   * references answer: a hundred locations in a few dozen files), so the file last
   * found held is kept for the next ask: no host path built and looked up again.
   * Held lines are never changed (the root is immutable), only dropped.
   */
  reader(root: RootRef, dirs: HostDirs): (coord: FileCoordinate, startLine: number, count: number) => MaybePromise<readonly string[] | undefined> {
    let lastPath: string | undefined;
    let lastHeld: string[] | undefined;
    return (coord, startLine, count) => {
      if (coord.jailPath === lastPath) return lastHeld!.slice(startLine, startLine + count);
      const host = hostPathOf(coord.jailPath, dirs);
      if (host === undefined) return undefined;
      const held = this.files.get(root, host);
      if (held) {
        lastPath = coord.jailPath;
        lastHeld = held;
        return held.slice(startLine, startLine + count);
      }
      return this.load(root, host, dirs).then((lines) => lines?.slice(startLine, startLine + count));
    };
  }

  /**
   * Keep the lines of a tree file the caller already read and checked (a query's
   * target), so an answer landing in it does not read it again. Under the same key
   * and bound as a read here; an entry already kept stays.
   */
  remember(root: RootRef, treeHostDir: string, file: { path: string; text: string; lines: string[] }): void {
    const host = join(treeHostDir, file.path);
    if (this.files.get(root, host) === undefined && Buffer.byteLength(file.text) <= MAX_FILE_BYTES) this.files.set(root, host, file.lines);
  }

  /** The root went away: forget its files. */
  dropRoot(rootId: string): void {
    this.files.dropRoot(rootId);
    this.dropIndexes(rootId);
  }

  /** The root's fetch ended: what its dependency indexes said before may be gone or new. */
  dropIndexes(rootId: string): void {
    this.composerIndex.dropRoot(rootId);
    this.pythonIndex.dropRoot(rootId);
  }

  /** The `version` of an npm package directory (in-jail path), for `external` coordinates. */
  versionReader(dirs: HostDirs): (dirInJail: string) => Promise<string | undefined> {
    return async (dirInJail) => {
      const host = hostPathOf(dirInJail, dirs);
      if (host === undefined) return undefined;
      try {
        const file = join(host, 'package.json');
        if ((await stat(file)).size > MAX_PACKAGE_JSON_BYTES) return undefined;
        const j = JSON.parse(await readFile(file, 'utf8')) as { version?: unknown };
        return typeof j.version === 'string' ? j.version : undefined;
      } catch {
        return undefined;
      }
    };
  }

  /** The version composer recorded for `name` in `<vendorDirInJail>/composer/installed.json`; undefined when not there. */
  composerVersionReader(root: RootRef, dirs: HostDirs): (vendorDirInJail: string, name: string) => Promise<string | undefined> {
    return async (vendorDirInJail, name) => {
      const host = hostPathOf(`${vendorDirInJail}/composer/installed.json`, dirs);
      if (host === undefined) return undefined;
      return (await this.composerIndex.load(root, host, () => this.readInstalledJson(host, dirs))).get(name);
    };
  }

  /** The distribution in `siteDirInJail` whose RECORD lists files under `top`. */
  pythonDistReader(root: RootRef, dirs: HostDirs): (siteDirInJail: string, top: string) => Promise<Dist | undefined> {
    return async (siteDirInJail, top) => {
      const host = hostPathOf(siteDirInJail, dirs);
      if (host === undefined) return undefined;
      return (await this.pythonIndex.load(root, host, () => this.readDistInfos(host, dirs))).get(top);
    };
  }

  /** Composer 2's {packages: [...]} or Composer 1's bare array. */
  private async readInstalledJson(host: string, dirs: HostDirs): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const text = await this.readSmall(host, dirs);
    if (text === undefined) return out;
    try {
      const j = JSON.parse(text) as unknown;
      const list = Array.isArray(j) ? j : (j as { packages?: unknown }).packages;
      for (const p of Array.isArray(list) ? list : []) {
        const { name, version } = (p ?? {}) as { name?: unknown; version?: unknown };
        if (typeof name === 'string' && typeof version === 'string') out.set(name, version);
      }
    } catch {
      /* not JSON: nothing is named */
    }
    return out;
  }

  /** Every <name>-<version>.dist-info: its METADATA's Name/Version, mapped from the first segment of each RECORD path. */
  private async readDistInfos(siteHost: string, dirs: HostDirs): Promise<Map<string, Dist>> {
    const out = new Map<string, Dist>();
    const names = await readdir(siteHost).catch(() => [] as string[]);
    for (const info of names.filter((n) => n.endsWith('.dist-info')).slice(0, MAX_DISTS)) {
      const meta = await this.readSmall(join(siteHost, info, 'METADATA'), dirs);
      const fromDir = /^(.+?)-([^-]+)\.dist-info$/.exec(info);
      const name = (meta && /^Name:\s*(.+?)\s*$/m.exec(meta)?.[1]) ?? fromDir?.[1];
      const version = (meta && /^Version:\s*(.+?)\s*$/m.exec(meta)?.[1]) ?? fromDir?.[2];
      if (!name || !version) continue;
      const record = await this.readSmall(join(siteHost, info, 'RECORD'), dirs);
      for (const line of (record ?? '').split('\n')) {
        const top = line.split(',', 1)[0]!.split('/', 1)[0]!;
        // The dist's own metadata, scripts (bin/) and pip's relative paths outside the target are not import packages.
        if (top === '' || top === '..' || top === 'bin' || top.endsWith('.dist-info') || top === '__pycache__') continue;
        if (!out.has(top)) out.set(top, { name, version });
      }
    }
    return out;
  }

  /** A small text file that resolves inside the root's dirs, or undefined. */
  private async readSmall(host: string, dirs: HostDirs): Promise<string | undefined> {
    if (!(await staysInside(host, dirs))) return undefined;
    try {
      const st = await stat(host);
      if (!st.isFile() || st.size > MAX_INDEX_BYTES) return undefined;
      return await readFile(host, 'utf8');
    } catch {
      return undefined;
    }
  }

  /** Read a file once (it never changes): only if it resolves inside the root's dirs. */
  private async load(root: RootRef, hostPath: string, dirs: HostDirs): Promise<string[] | undefined> {
    if (!(await staysInside(hostPath, dirs))) return undefined;
    try {
      const st = await stat(hostPath);
      if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
      const lines = splitLines(this.decoder.decode(await readFile(hostPath)));
      this.files.set(root, hostPath, lines);
      return lines;
    } catch {
      return undefined;
    }
  }
}

/** A link inside a root may point elsewhere in it, never out (the store refuses such links; this is the second lock). */
async function staysInside(host: string, dirs: HostDirs): Promise<boolean> {
  try {
    const real = await realpath(host);
    for (const d of [dirs.treeHostDir, dirs.depsHostDir, ...(dirs.lentDeps ?? [])]) {
      if (d === undefined) continue;
      const top = await realpath(d).catch(() => undefined);
      if (top !== undefined && real.startsWith(top + sep)) return true;
    }
  } catch {
    /* unreadable */
  }
  return false;
}
