// clangd's compile_commands.json for one workspace, generated per session and
// bound at CLANGD_CDB_DIR (row argv: --compile-commands-dir). Why generate one:
// - Where the index lives. clangd keeps its background index next to the database
//   it loaded (<db dir>/.cache/clangd/index). The tree is read-only, so a database
//   found there means an index clangd cannot write; the copy lives in the session's
//   private tmpfs HOME, so the index does too, chosen rather than failed into.
// - A tree without a database still gets a whole-workspace index: clangd only
//   indexes in the background what a database lists, and with none it answers from
//   the open file and its headers (a call's definition is then the header's
//   declaration). Every C/C++ source of the workspace is listed with the same flags:
//   the workspace's compile_flags.txt when it has one, else the fallback flags
//   (the workspace, include/ and src/ on the include path).
// - A database written on a CI machine names that machine's checkout
//   (/home/runner/work/app/app/src/x.c, -I/home/runner/work/app/app/include): the
//   copy is rebased onto the workspace's in-jail path when its files are found in
//   the tree under a common prefix, so clangd matches the files and finds headers.
// Nothing is ever built and no compiler is ever run: clangd only parses, and it
// is never given --query-driver, so the driver named here is a name, not a program.
import { lstat, readdir, readFile } from 'node:fs/promises';
import { isAbsolute, join, posix } from 'node:path';
import { JAIL_HOME } from '../jail/policy.js';

/** Where the generated database (and so clangd's index) lives inside the jail. */
export const CLANGD_CDB_DIR = `${JAIL_HOME}/clangd`;

export interface CdbLimits {
  /** Sources listed at most (beyond them clangd infers commands for the rest). */
  maxFiles: number;
  /** Directory entries looked at while walking. */
  maxEntries: number;
  /** A tree's own compile_commands.json larger than this is not copied (fallback instead). */
  maxDatabaseBytes: number;
}

export const defaultCdbLimits: CdbLimits = { maxFiles: 20_000, maxEntries: 200_000, maxDatabaseBytes: 64 * 1024 * 1024 };

const C_SOURCES = new Set(['.c']);
const CXX_SOURCES = new Set(['.cc', '.cpp', '.cxx', '.c++', '.cp']);
const SKIP_DIRS = new Set(['node_modules']);
const MARKERS = ['compile_commands.json', 'compile_flags.txt'];

/** The include path used when a workspace says nothing about its flags. */
export function fallbackFlags(workspaceAt: string): string[] {
  return [`-I${workspaceAt}`, `-I${workspaceAt}/include`, `-I${workspaceAt}/src`];
}

/** A regular file (never a link) no larger than maxBytes, else undefined. */
async function readPlain(path: string, maxBytes: number): Promise<string | undefined> {
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isFile() || st.size > maxBytes) return undefined;
  return readFile(path, 'utf8');
}

function suffix(name: string): string {
  const i = name.lastIndexOf('.');
  return i <= 0 ? '' : name.slice(i).toLowerCase();
}

/**
 * The session files for clangd on workspace `ws`: the workspace's own
 * compile_commands.json, copied, or one listing its sources with its flags.
 */
export async function clangdSessionFiles(
  ws: { treeHostDir: string; workspace: string; workspaceAt: string },
  limits: CdbLimits = defaultCdbLimits,
): Promise<Record<string, string>> {
  const hostWs = join(ws.treeHostDir, ws.workspace);
  const at = `${CLANGD_CDB_DIR}/compile_commands.json`;
  // Where clangd itself looks: the directory, then its build/ (CMake's habit).
  const own = (await readPlain(join(hostWs, 'compile_commands.json'), limits.maxDatabaseBytes)) ?? (await readPlain(join(hostWs, 'build', 'compile_commands.json'), limits.maxDatabaseBytes));
  if (own !== undefined) return { [at]: await rebaseDatabase(own, hostWs, ws.workspaceAt) };

  const flagsText = await readPlain(join(hostWs, 'compile_flags.txt'), 1024 * 1024);
  const flags = flagsText !== undefined ? flagsText.split('\n').map((l) => l.trim()).filter((l) => l !== '') : fallbackFlags(ws.workspaceAt);
  const entries: { directory: string; file: string; arguments: string[] }[] = [];
  let seen = 0;
  // Breadth first, links never followed, nested workspaces (their own database or
  // flags) left to their own sessions.
  let level = [''];
  while (level.length > 0 && entries.length < limits.maxFiles && seen <= limits.maxEntries) {
    const next: string[] = [];
    for (const rel of level) {
      const dirents = await readdir(join(hostWs, rel), { withFileTypes: true }).catch(() => []);
      seen += dirents.length;
      if (seen > limits.maxEntries) break; // listed so far is what clangd gets; it infers the rest
      if (rel !== '' && dirents.some((d) => d.isFile() && MARKERS.includes(d.name))) continue;
      for (const d of dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        const r = rel === '' ? d.name : `${rel}/${d.name}`;
        if (d.isDirectory() && !SKIP_DIRS.has(d.name) && !d.name.startsWith('.')) next.push(r);
        if (!d.isFile() || entries.length >= limits.maxFiles) continue;
        const sfx = suffix(d.name);
        if (!C_SOURCES.has(sfx) && !CXX_SOURCES.has(sfx)) continue;
        const file = `${ws.workspaceAt}/${r}`;
        entries.push({ directory: ws.workspaceAt, file, arguments: [C_SOURCES.has(sfx) ? 'clang' : 'clang++', ...flags, '-c', file] });
      }
    }
    level = next;
  }
  return { [at]: JSON.stringify(entries) };
}

/** Entries looked at to find the prefix a database was written under. */
const REBASE_SAMPLE = 64;

/**
 * The database with the checkout prefix it was written under replaced by
 * `workspaceAt`, when that prefix can be told: for sampled entries, the shortest
 * tail of the file's absolute path that exists in the workspace (a regular file,
 * reached without `..`) gives prefix = path minus tail; the most common one wins.
 * Unchanged when it is already the jail's layout, unparseable, or no prefix is found.
 */
export async function rebaseDatabase(text: string, hostWs: string, workspaceAt: string): Promise<string> {
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch {
    return text; // clangd will say what is wrong with it
  }
  if (!Array.isArray(entries)) return text;
  const votes = new Map<string, number>();
  for (const e of entries.slice(0, REBASE_SAMPLE) as { directory?: unknown; file?: unknown }[]) {
    if (typeof e?.file !== 'string' || typeof e.directory !== 'string') continue;
    const abs = posix.normalize(isAbsolute(e.file) ? e.file : posix.join(e.directory, e.file));
    if (abs === workspaceAt || abs.startsWith(`${workspaceAt}/`)) return text; // written for this layout
    const segs = abs.split('/').filter((x) => x !== '');
    for (let i = segs.length - 1; i >= 0; i--) {
      const tail = segs.slice(i);
      if (tail.some((x) => x === '..' || x === '.')) break;
      const st = await lstat(join(hostWs, ...tail)).catch(() => undefined);
      if (st?.isFile()) {
        const prefix = '/' + segs.slice(0, i).join('/');
        if (prefix !== '/') votes.set(prefix, (votes.get(prefix) ?? 0) + 1);
        break;
      }
    }
  }
  const best = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0];
  if (!best) return text;
  // Every string value: directory, file, output, command and each argument
  // (-I/prefix/include, -include /prefix/config.h, ...). A path boundary must follow.
  const re = new RegExp(best.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '(?=/|$|\\s|")', 'g');
  const swap = (v: unknown): unknown => (typeof v === 'string' ? v.replace(re, workspaceAt) : Array.isArray(v) ? v.map(swap) : v);
  return JSON.stringify(
    (entries as Record<string, unknown>[]).map((e) => (typeof e === 'object' && e !== null ? Object.fromEntries(Object.entries(e).map(([k, v]) => [k, swap(v)])) : e)),
  );
}
