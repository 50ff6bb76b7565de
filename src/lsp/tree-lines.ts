// The I/O behind projection's `ReadLines` and `readPackageVersion`: lines of tree
// and dependency files, read on the host through paths.hostPathOf (which refuses
// anything outside the root's tree and deps dirs). Roots are immutable, so files
// are cached by host path, bounded by count and by the bytes of text held.
import { readFile, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { LRUCache } from 'lru-cache';
import type { FileCoordinate } from './coordinates.js';
import { splitLines } from './encoding.js';
import { hostPathOf, type HostDirs } from './paths.js';

/** Files larger than this get no previews (bundles, generated code). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** A dependency's package.json read for its version: larger ones are not parsed (a tree's vendored one can be anything). */
const MAX_PACKAGE_JSON_BYTES = 1024 * 1024;
/**
 * What one line costs held in an array beside its characters (pointer, string
 * header): a file of 8 MiB newlines is 8 M lines, ~300 MiB of heap, not 8 MiB,
 * and the cache's byte bound must count that or it holds many times its size.
 */
const LINE_OVERHEAD_BYTES = 40;

export class TreeLines {
  private readonly files = new LRUCache<string, string[]>({
    max: 512,
    maxSize: 64 * 1024 * 1024,
    sizeCalculation: (lines) => Math.max(1, lines.reduce((n, l) => n + l.length * 2 + LINE_OVERHEAD_BYTES, 0)),
  });
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  /** A ReadLines for one root. */
  reader(dirs: HostDirs): (coord: FileCoordinate, startLine: number, count: number) => Promise<readonly string[] | undefined> {
    return async (coord, startLine, count) => {
      const host = hostPathOf(coord.jailPath, dirs);
      if (host === undefined) return undefined;
      const lines = this.files.get(host) ?? (await this.load(host, dirs));
      return lines?.slice(startLine, startLine + count);
    };
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

  /** Read a file once (it never changes): only if it resolves inside the root's dirs. */
  private async load(hostPath: string, dirs: HostDirs): Promise<string[] | undefined> {
    if (!(await staysInside(hostPath, dirs))) return undefined;
    try {
      const st = await stat(hostPath);
      if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
      const lines = splitLines(this.decoder.decode(await readFile(hostPath)));
      this.files.set(hostPath, lines);
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
    for (const d of [dirs.treeHostDir, dirs.depsHostDir]) {
      if (d === undefined) continue;
      const top = await realpath(d).catch(() => undefined);
      if (top !== undefined && real.startsWith(top + sep)) return true;
    }
  } catch {
    /* unreadable */
  }
  return false;
}
