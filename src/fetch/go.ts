// The Go fetcher: `go mod download all` in each Go module of the tree, in the
// FETCH jail, with the module cache under the root's dependency dir.
//
// Why each setting (go 1.24; `go help environment`, `go help module-auth`):
// - `all`, not the bare form: bare `go mod download` fetches the build list but
//   records only go.mod hashes; `all` downloads every module providing a package
//   the main module imports, which is what gopls needs to resolve definitions.
// - The tree is bound read-only, so go can never rewrite go.mod or go.sum.
//   GOFLAGS=-mod=readonly makes that explicit: the tree's go.sum is the law and
//   every downloaded zip is checked against it ("SECURITY ERROR … checksum
//   mismatch" fails the fetch). A go.sum missing entries fails too ("updating
//   go.sum: read-only file system"): SERVE runs -mod=readonly as well and would
//   fail on the same entries, so the fix is the tree's (`go mod tidy`), not ours.
// - GOSUMDB is left at Go's default (sum.golang.org, an allowed registry). With a
//   complete go.sum it is never consulted, so a file:// proxy in tests needs no
//   GOSUMDB=off; when go.sum lacks an entry, go verifies against the checksum
//   database *before* extracting, so the module cache never holds unverified code
//   (with GOSUMDB=off the unverified module is extracted first, then go fails to
//   write go.sum).
// - GOTOOLCHAIN=local (never download a toolchain: a go.mod `toolchain` line is
//   then ignored, and a `go` line above the installed Go fails the fetch with go's
//   own message, which goHint turns into the reason), GOTELEMETRY=off, GOENV=off (no
//   user go/env file), GOWORK=off (each module on its own: a go.work would make one
//   module's fetch depend on its neighbours), GOVCS=*:off (a `direct` in GOPROXY
//   must not run git or hg: VCS tools are far more attack surface than the proxy
//   protocol), GOFLAGS=-modcacherw (the cache is bound read-only in SERVE anyway, and
//   writable files let the store delete it without chmod).
// - A file:// GOPROXY entry is bound read-only at the same path, so go sees the
//   URL it was configured with.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Bind } from '../jail/types.js';
import { isPlainDir } from './ecosystems.js';
import { GO_MODCACHE_REL, under, writableDepsDir, type ServeMount, type StepContext, type StepSpawn } from './step.js';
import { GOMODCACHE_AT, JAIL_TMP, TREE_AT } from '../jail/layout.js';

/**
 * What keeps the go command to the image's Go and to what lspd configured, in FETCH
 * and SERVE alike (gopls runs `go list`; rows/go.ts): never a downloaded toolchain,
 * no telemetry, no go/env file, no go.work, no version control. Why each: above.
 */
export const GO_LOCKDOWN_ENV = { GOTOOLCHAIN: 'local', GOTELEMETRY: 'off', GOENV: 'off', GOWORK: 'off', GOVCS: '*:off' } as const;

export async function prepareGo(ctx: StepContext, ws: string): Promise<StepSpawn> {
  if (!ctx.tools.go) throw new Error('go toolchain not installed');
  const modcache = await writableDepsDir(ctx, GO_MODCACHE_REL);
  // The tree's go.sum (immutable), not anything a jail wrote: what the org's store may give is what it names.
  await ctx.packages?.seedGo(join(ctx.treeDir, ws, 'go.sum'), modcache.host);
  const binds: Bind[] = [modcache, ...goProxyBinds(ctx.goProxy)];
  return {
    argv: [ctx.tools.go, 'mod', 'download', 'all'],
    env: {
      GOPROXY: ctx.goProxy,
      GOMODCACHE: modcache.at,
      GOFLAGS: '-mod=readonly -modcacherw',
      ...GO_LOCKDOWN_ENV,
      GOCACHE: `${JAIL_TMP}/go-build`,
      GOPATH: `${JAIL_TMP}/go`,
    },
    binds,
    tree: { hostDir: ctx.treeDir, at: TREE_AT },
    cwd: under(TREE_AT, ws),
  };
}

/** Each file:// entry of a GOPROXY list (entries split on ',' and '|'), bound read-only at its own path. */
export function goProxyBinds(goProxy: string): Bind[] {
  const binds: Bind[] = [];
  for (const entry of goProxy.split(/[,|]/)) {
    const e = entry.trim();
    if (!e.startsWith('file://')) continue;
    const dir = fileURLToPath(e);
    binds.push({ host: dir, at: dir });
  }
  return binds;
}

/** A one-line hint for the caller when go's own message is buried in the tail. */
export function goHint(output: string): string | undefined {
  if (/updating go\.sum|missing go\.sum entry|verifying [^\n]*\/lookup\//.test(output)) {
    return 'go.sum lacks entries that `go mod download all` needs; the tree is read-only, so commit a complete go.sum (go mod tidy).';
  }
  const newer = /go\.mod requires go >= (\S+) \(running go (\S+?);/.exec(output);
  if (newer) {
    return `go.mod requires go ${newer[1]}, newer than this daemon's Go ${newer[2]}; lspd runs only its pinned Go and never downloads a toolchain (GOTOOLCHAIN=local).`;
  }
  if (/SECURITY ERROR|checksum mismatch/.test(output)) return "a downloaded module does not match the hash in the tree's go.sum.";
  if (/GOVCS|disabled by GOVCS/.test(output)) return 'a module is only reachable by version control (direct), which FETCH never runs.';
  if (/Forbidden|403/.test(output)) return 'a module host is not among the allowed registries.';
  return undefined;
}

/** The module cache, when it is a plain directory the SERVE side may bind read-only. */
export async function goServeMounts(depsDir: string): Promise<ServeMount[]> {
  return (await isPlainDir(depsDir, GO_MODCACHE_REL)) ? [{ host: join(depsDir, GO_MODCACHE_REL), at: GOMODCACHE_AT, treeRel: false }] : [];
}

/**
 * gopls's dependency environment in SERVE: the fetched module cache, read-only.
 * `fetched` false: dependencies are absent, say so by leaving GOMODCACHE to the
 * session's private HOME. The rest (no network, -mod=readonly) is the row's own.
 */
export function goServeEnv(fetched: boolean): Record<string, string> {
  return fetched ? { GOMODCACHE: GOMODCACHE_AT } : {};
}
