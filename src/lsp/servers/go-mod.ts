// What a Go module's go.mod asks of the toolchain, said in the answers of its gopls
// session (issue 32). lspd runs only the image's Go, never a download
// (GOTOOLCHAIN=local in FETCH and SERVE), so (https://go.dev/doc/toolchain):
// - a `go` line above the installed Go is a requirement go cannot meet: it refuses
//   to load the module ("go.mod requires go >= 1.25.0 (running go 1.24.4;
//   GOTOOLCHAIN=local)"), gopls has no packages, and definitions fail or come back
//   empty. A note says why in every answer, instead of an answer that looks empty.
// - a `toolchain` line above it is a preference, not a requirement: with
//   GOTOOLCHAIN=local go ignores it and the module loads with the installed Go. Noted
//   too, since the answers come from another Go than the one the module names.
// go.mod is read as clangd's compile database is: a regular file (never a link),
// bounded, from the host tree; nothing of it reaches a command line.
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GeneratedFiles } from '../session/session-files.js';

/** A go.mod larger than this is not read for notes (go.mod files are a few KiB). */
const MAX_GO_MOD_BYTES = 256 * 1024;

/** The `go` and `toolchain` directives of a go.mod (versions without the `go` prefix). */
export function goModDirectives(text: string): { go?: string; toolchain?: string } {
  const out: { go?: string; toolchain?: string } = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    const m = /^(go|toolchain)\s+(\S+)$/.exec(line);
    if (!m) continue;
    const v = m[1] === 'toolchain' ? m[2]!.replace(/^go/, '') : m[2]!;
    if (/^\d+(\.\d+){0,2}([a-z]+\d*)?$/.test(v)) out[m[1] as 'go' | 'toolchain'] ??= v;
  }
  return out;
}

/**
 * Go's version order, far enough to tell "newer than the installed Go": numbers
 * first, and a language version (1.25) or a pre-release (1.25rc1) before its .0.
 */
export function compareGoVersions(a: string, b: string): number {
  const key = (v: string): number[] => {
    const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?([a-z]+)?(\d+)?$/.exec(v);
    if (!m) return [0, 0, -3, 0];
    const pre = m[4] === undefined ? 0 : m[4] === 'rc' ? -1 : -2;
    return [Number(m[1]), Number(m[2] ?? 0), m[3] !== undefined ? Number(m[3]) : m[4] !== undefined ? pre : -3, Number(m[5] ?? 0)];
  };
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!;
  return 0;
}

/** What the answers of a session on this go.mod say, given the installed Go's version. */
export function goModNotes(goMod: string, installed: string): string[] {
  const { go, toolchain } = goModDirectives(goMod);
  const notes: string[] = [];
  if (go && compareGoVersions(go, installed) > 0) {
    notes.push(
      `go.mod requires go ${go}, newer than this daemon's Go ${installed}: go refuses to load the module and lspd never downloads a toolchain (GOTOOLCHAIN=local), so answers in it are empty or fail.`,
    );
  } else if (toolchain && compareGoVersions(toolchain, installed) > 0) {
    notes.push(`go.mod prefers toolchain go${toolchain}; lspd never downloads one (GOTOOLCHAIN=local): answers come from Go ${installed}.`);
  }
  return notes;
}

const installed = new Map<string, Promise<string | undefined>>();

/** The installed Go's version from its tree's VERSION file ("go1.24.4" → "1.24.4"), read once per tree. */
export function installedGoVersion(goroot: string): Promise<string | undefined> {
  let v = installed.get(goroot);
  if (!v) {
    v = readFile(join(goroot, 'VERSION'), 'utf8').then(
      (t) => /^go(\S+)/.exec(t)?.[1],
      () => undefined,
    );
    installed.set(goroot, v);
  }
  return v;
}

/** The go row's session notes: no files, what the workspace's go.mod asks that lspd will not do. */
export async function goSessionNotes(ws: { treeHostDir: string; workspace: string }, goroot: string): Promise<GeneratedFiles> {
  const path = join(ws.treeHostDir, ws.workspace, 'go.mod');
  const st = await lstat(path).catch(() => undefined);
  const version = await installedGoVersion(goroot);
  if (!st?.isFile() || st.size > MAX_GO_MOD_BYTES || !version) return { files: {}, notes: [] };
  const text = await readFile(path, 'utf8').catch(() => '');
  return { files: {}, notes: goModNotes(text, version) };
}
