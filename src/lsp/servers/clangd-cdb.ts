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
// - Bounded in bytes, whatever the tree holds: the database is written as a stream
//   of entries (the flags serialized once and shared by every entry), never built
//   in memory, and stops at `maxDatabaseBytes` (fewer files listed: clangd infers
//   flags for the rest); a compile_flags.txt over its bound is not used, and a
//   tree's own database over the bound is not copied. Each such choice is a note
//   the session logs and its answers carry. (A tree of 100 sources and a large
//   compile_flags.txt once grew the daemon by 483 MiB: every flag in every entry.)
// - Flags a tree may not give (compile-flags.ts: plugins, response files, config
//   files, toolchain dirs) are removed from compile_flags.txt and from every entry
//   of a copied database, and said so in a note.
// Nothing is ever built and no compiler is ever run: clangd only parses, and it
// is never given --query-driver, so the driver named here is a name, not a program.
import { lstat, readdir, readFile } from 'node:fs/promises';
import { isAbsolute, join, posix } from 'node:path';
import { JAIL_HOME } from '../../jail/layout.js';
import { filterCommand, filterFlags, splitCommand } from './compile-flags.js';
import type { GeneratedFiles } from '../session/session-files.js';

/** Where the generated database (and so clangd's index) lives inside the jail. */
export const CLANGD_CDB_DIR = `${JAIL_HOME}/clangd`;

export interface CdbLimits {
  /** Sources listed at most (beyond them clangd infers commands for the rest). */
  maxFiles: number;
  /** Directory entries looked at while walking. */
  maxEntries: number;
  /** The generated database stops before this many bytes; a tree's own larger than this is not copied. */
  maxDatabaseBytes: number;
  /** A compile_flags.txt larger than this is not used (fallback flags instead). */
  maxFlagsBytes: number;
  /** A compile_flags.txt with more flags than this is not used. */
  maxFlags: number;
}

export const defaultCdbLimits: CdbLimits = {
  maxFiles: 20_000,
  maxEntries: 200_000,
  maxDatabaseBytes: 64 * 1024 * 1024,
  maxFlagsBytes: 64 * 1024,
  maxFlags: 4096,
};

const C_SOURCES = new Set(['.c']);
const CXX_SOURCES = new Set(['.cc', '.cpp', '.cxx', '.c++', '.cp']);
const SKIP_DIRS = new Set(['node_modules']);
const MARKERS = ['compile_commands.json', 'compile_flags.txt'];
/** Removed arguments quoted in a note, at most (the count is always given). */
const NOTE_ARGS = 6;

/** The include path used when a workspace says nothing about its flags. */
export function fallbackFlags(workspaceAt: string): string[] {
  return [`-I${workspaceAt}`, `-I${workspaceAt}/include`, `-I${workspaceAt}/src`];
}

/** A regular file (never a link): its text, or its size when larger than maxBytes; undefined when absent. */
async function readPlain(path: string, maxBytes: number): Promise<{ text: string } | { tooLarge: number } | undefined> {
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isFile()) return undefined;
  if (st.size > maxBytes) return { tooLarge: st.size };
  return { text: await readFile(path, 'utf8') };
}

function suffix(name: string): string {
  const i = name.lastIndexOf('.');
  return i <= 0 ? '' : name.slice(i).toLowerCase();
}

const isCxx = (file: string) => CXX_SOURCES.has(suffix(file));

/** Arguments removed from one source: how many, and the first few (for the note). */
class Removed {
  count = 0;
  readonly first: string[] = [];
  add(args: readonly string[]): void {
    this.count += args.length;
    for (const a of args) if (this.first.length < NOTE_ARGS) this.first.push(a);
  }
  note(where: string): string {
    const shown = this.first.map((a) => JSON.stringify(a)).join(' ');
    return `${where}: removed ${this.count} argument${this.count === 1 ? '' : 's'} a tree may not give clangd (plugins, response files, config files, toolchain paths): ${shown}${this.count > this.first.length ? ' …' : ''}`;
  }
}

const bytes = (n: number) => (n >= 1024 * 1024 ? `${Math.round(n / (1024 * 1024))} MiB` : `${Math.round(n / 1024)} KiB`);

/**
 * The session files for clangd on workspace `ws`: the workspace's own
 * compile_commands.json, copied (rebased, filtered), or one listing its sources
 * with its compile_flags.txt (filtered) or the fallback flags. The database is a
 * stream, consumed by writeSessionFiles; `notes` is complete once it has been.
 */
export async function clangdSessionFiles(
  ws: { treeHostDir: string; workspace: string; workspaceAt: string },
  limits: CdbLimits = defaultCdbLimits,
): Promise<GeneratedFiles> {
  const hostWs = join(ws.treeHostDir, ws.workspace);
  const at = `${CLANGD_CDB_DIR}/compile_commands.json`;
  const notes: string[] = [];
  // Where clangd itself looks: the directory, then its build/ (CMake's habit).
  for (const rel of ['compile_commands.json', 'build/compile_commands.json']) {
    const own = await readPlain(join(hostWs, rel), limits.maxDatabaseBytes);
    if (own === undefined) continue;
    if ('tooLarge' in own) {
      notes.push(`${rel} (${bytes(own.tooLarge)}) is over the ${bytes(limits.maxDatabaseBytes)} bound: not used; sources are listed instead`);
      break;
    }
    const copy = await copiedDatabase(own.text, hostWs, ws.workspaceAt, limits.maxDatabaseBytes, notes, rel);
    if (copy) return { files: { [at]: copy }, notes };
    break;
  }

  let flags = fallbackFlags(ws.workspaceAt);
  const flagsFile = await readPlain(join(hostWs, 'compile_flags.txt'), limits.maxFlagsBytes);
  if (flagsFile && 'tooLarge' in flagsFile) {
    notes.push(`compile_flags.txt (${bytes(flagsFile.tooLarge)}) is over the ${bytes(limits.maxFlagsBytes)} bound: not used; fallback flags instead`);
  } else if (flagsFile) {
    const lines = flagsFile.text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
    if (lines.length > limits.maxFlags) {
      notes.push(`compile_flags.txt has ${lines.length} flags, over the bound of ${limits.maxFlags}: not used; fallback flags instead`);
    } else {
      const f = filterFlags(lines);
      if (f.removed.length) {
        const removed = new Removed();
        removed.add(f.removed);
        notes.push(removed.note('compile_flags.txt'));
      }
      flags = f.args;
    }
  }
  return { files: { [at]: listedSources(hostWs, ws.workspaceAt, flags, limits, notes) }, notes };
}

/**
 * Every C/C++ source of the workspace with `flags`, as a stream of JSON text.
 * The flags are serialized once: an entry is its file, the shared flags and a few
 * bytes, so memory stays the size of one entry whatever the product of files and
 * flags. Stops before `maxDatabaseBytes` (the array is always closed: valid JSON).
 */
async function* listedSources(hostWs: string, workspaceAt: string, flags: readonly string[], limits: CdbLimits, notes: string[]): AsyncGenerator<string> {
  const shared = flags.map((f) => JSON.stringify(f)).join(',');
  const sharedBytes = Buffer.byteLength(shared);
  const dir = JSON.stringify(workspaceAt);
  let written = 1; // '['
  let listed = 0;
  let full = false;
  yield '[';
  let seen = 0;
  // Breadth first, links never followed, nested workspaces (their own database or
  // flags) left to their own sessions.
  let level = [''];
  walk: while (level.length > 0 && listed < limits.maxFiles && seen <= limits.maxEntries) {
    const next: string[] = [];
    for (const rel of level) {
      const dirents = await readdir(join(hostWs, rel), { withFileTypes: true }).catch(() => []);
      seen += dirents.length;
      if (seen > limits.maxEntries) break; // listed so far is what clangd gets; it infers the rest
      if (rel !== '' && dirents.some((d) => d.isFile() && MARKERS.includes(d.name))) continue;
      for (const d of dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        const r = rel === '' ? d.name : `${rel}/${d.name}`;
        if (d.isDirectory() && !SKIP_DIRS.has(d.name) && !d.name.startsWith('.')) next.push(r);
        if (!d.isFile() || listed >= limits.maxFiles) continue;
        const sfx = suffix(d.name);
        if (!C_SOURCES.has(sfx) && !CXX_SOURCES.has(sfx)) continue;
        const file = JSON.stringify(`${workspaceAt}/${r}`);
        const head = `${listed ? ',' : ''}{"directory":${dir},"file":${file},"arguments":[${C_SOURCES.has(sfx) ? '"clang"' : '"clang++"'}${flags.length ? ',' : ''}`;
        const tail = `,"-c",${file}]}`;
        const size = Buffer.byteLength(head) + sharedBytes + Buffer.byteLength(tail);
        if (written + size + 1 > limits.maxDatabaseBytes) {
          full = true;
          break walk;
        }
        yield head;
        if (flags.length) yield shared;
        yield tail;
        written += size;
        listed++;
      }
    }
    level = next;
  }
  yield ']';
  if (full) {
    notes.push(
      `the generated compile database stopped at the ${bytes(limits.maxDatabaseBytes)} bound after ${listed} sources: clangd infers the flags of the others`,
    );
  }
}

/**
 * A tree's own database as a stream of JSON text: rebased onto the jail's path,
 * each entry's arguments filtered (a `command` is split and given back as
 * `arguments`), entries that are not compile commands dropped; undefined (with a
 * note) when it is not a JSON array of objects. Memory: the text and one entry.
 */
async function copiedDatabase(
  text: string,
  hostWs: string,
  workspaceAt: string,
  maxBytes: number,
  notes: string[],
  rel: string,
): Promise<AsyncIterable<string> | undefined> {
  let sample: unknown[];
  try {
    sample = [];
    for (const e of arrayElements(text)) {
      sample.push(JSON.parse(e));
      if (sample.length >= REBASE_SAMPLE) break;
    }
  } catch {
    notes.push(`${rel} is not a JSON array: not used`);
    return undefined;
  }
  const swap = await rebaser(sample, hostWs, workspaceAt);
  // Every element is parsed before anything is written, so a database broken
  // half-way is refused whole rather than cut where the break is.
  try {
    for (const e of arrayElements(text)) JSON.parse(e);
  } catch {
    notes.push(`${rel} is not a JSON array: not used`);
    return undefined;
  }
  return (async function* () {
    const removed = new Removed();
    let dropped = 0;
    let written = 1;
    let listed = 0;
    let full = false;
    yield '[';
    for (const raw of arrayElements(text)) {
      const entry = safeEntry(JSON.parse(raw) as unknown, swap, removed);
      if (!entry) {
        dropped++;
        continue;
      }
      const out = (listed ? ',' : '') + JSON.stringify(entry);
      const size = Buffer.byteLength(out);
      if (written + size + 1 > maxBytes) {
        full = true;
        break;
      }
      yield out;
      written += size;
      listed++;
    }
    yield ']';
    if (removed.count) notes.push(removed.note(rel));
    if (dropped) notes.push(`${rel}: dropped ${dropped} entr${dropped === 1 ? 'y' : 'ies'} that are not compile commands`);
    if (full) notes.push(`the copied compile database stopped at the ${bytes(maxBytes)} bound after ${listed} entries: clangd infers the flags of the others`);
  })();
}

/** One entry made safe, or undefined when it is not a compile command. */
function safeEntry(e: unknown, swap: (v: string) => string, removed: Removed): Record<string, unknown> | undefined {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) return undefined;
  const { directory, file, arguments: args, command, output } = e as Record<string, unknown>;
  if (typeof directory !== 'string' || typeof file !== 'string') return undefined;
  let argv: string[];
  if (Array.isArray(args) && args.length > 0 && args.every((a) => typeof a === 'string')) argv = args.map(swap);
  else if (typeof command === 'string') argv = splitCommand(swap(command));
  else return undefined;
  const f = filterCommand(argv, isCxx(file));
  removed.add(f.removed);
  return { directory: swap(directory), file: swap(file), arguments: f.args, ...(typeof output === 'string' ? { output: swap(output) } : {}) };
}

/**
 * The elements of a top-level JSON array, as text, one at a time (each still to
 * be parsed): a database is never held parsed whole. Throws SyntaxError when the
 * text is not an array.
 */
export function* arrayElements(text: string): Generator<string> {
  const ws = (i: number) => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
    return i;
  };
  let i = ws(0);
  if (text[i] !== '[') throw new SyntaxError('not a JSON array');
  i = ws(i + 1);
  if (text[i] === ']') {
    if (ws(i + 1) !== text.length) throw new SyntaxError('text after the array');
    return;
  }
  for (;;) {
    const start = i;
    let depth = 0;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      } else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) break;
        depth--;
      } else if (c === 0x2c && depth === 0) break;
    }
    if (i >= text.length) throw new SyntaxError('unterminated array');
    yield text.slice(start, i);
    if (text[i] === ']') {
      if (ws(i + 1) !== text.length) throw new SyntaxError('text after the array');
      return;
    }
    i++; // past ','
  }
}

/** Entries looked at to find the prefix a database was written under. */
const REBASE_SAMPLE = 64;

/**
 * How to swap the checkout prefix a database was written under for
 * `workspaceAt`, when that prefix can be told: for sampled entries, the shortest
 * tail of the file's absolute path that exists in the workspace (a regular file,
 * reached without `..`) gives prefix = path minus tail; the most common one wins.
 * The identity when it is already the jail's layout or no prefix is found.
 */
async function rebaser(sample: readonly unknown[], hostWs: string, workspaceAt: string): Promise<(v: string) => string> {
  const same = (v: string) => v;
  const votes = new Map<string, number>();
  for (const e of sample as { directory?: unknown; file?: unknown }[]) {
    if (typeof e?.file !== 'string' || typeof e.directory !== 'string') continue;
    const abs = posix.normalize(isAbsolute(e.file) ? e.file : posix.join(e.directory, e.file));
    if (abs === workspaceAt || abs.startsWith(`${workspaceAt}/`)) return same; // written for this layout
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
  if (!best) return same;
  // Every string value: directory, file, output, command and each argument
  // (-I/prefix/include, -include /prefix/config.h, ...). A path boundary must follow.
  const re = new RegExp(best.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '(?=/|$|\\s|")', 'g');
  return (v) => v.replace(re, workspaceAt);
}
