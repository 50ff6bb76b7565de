// Go: Debian's gopls, over the module cache FETCH filled.
import { GO_LOCKDOWN_ENV } from '../../../fetch/go.js';
import { JAIL_HOME } from '../../../jail/layout.js';
import { goSessionNotes, installedGoVersion } from '../go-mod.js';
import { probeBinary } from '../server-env.js';
import type { ServerRow } from '../server-row.js';

/** Go's own tree (golang-go's link to /usr/lib/go-1.24, Debian 13's); gopls runs `go list` from it. */
export const GOROOT = '/usr/lib/go';

export function goRow(): ServerRow {
  return {
    // gopls (Debian 13's 0.16.1 on its Go 1.24; bookworm's 0.5.0 on Go 1.19 gave
    // false errors on go 1.22/1.23 code: range over an int or a function). Quirks:
    // - needs /proc (readlink /proc/self/exe at start) and /dev/null (go list);
    //   both are in every SERVE jail.
    // - runs `go list` for every package load: GOROOT is the image's, the build
    //   cache (GOCACHE, from XDG_CACHE_HOME) and GOPATH live in the private HOME.
    // - dependencies: the module cache FETCH filled is bound read-only at
    //   /deps/go/pkg/mod and named by GOMODCACHE (the fetcher's serveEnv adds it);
    //   GOPROXY=off and -mod=readonly so a missing module is an error, never a
    //   download or a rewrite of go.mod/go.sum. GOTOOLCHAIN=local: never fetch a Go.
    // - readiness: it loads the workspace after `initialized` and holds requests
    //   until then; its progress ("Setting up workspace") begins a few ms after
    //   `initialized` and closes when loaded (expectProgress: the diagnostics
    //   window then starts after the load, not during it). graceMs 0: a request
    //   sent as the load ends is held until gopls has type-checked for it, so the
    //   grace only delayed that work (bench/calibrate: none answered wrong after).
    // - positions: UTF-16 only.
    // - its type checker is Go 1.22's (Debian builds gopls 0.16.1 with it): range over
    //   a function needs GOEXPERIMENT=rangefunc (below), which also stops it flagging
    //   one in a go <= 1.22 module (the build would); a generic type alias (go 1.24)
    //   is a false "generic type cannot be alias". A gopls built with Go >= 1.24 ends both.
    // - go.mod's `go` line above the installed Go: go refuses the module and gopls
    //   loads nothing; a `toolchain` line above it is ignored (GOTOOLCHAIN=local).
    //   Both are said in the session's answers (`notes`, from go-mod.ts).
    // Code from the tree: none. The go command it runs is the image's (GOROOT);
    // what could make go run another program is pinned here, where a tree cannot
    // reach: GOTOOLCHAIN=local (a go.mod `toolchain` line never downloads or
    // runs a Go), GOFLAGS set (so no -toolexec/-exec), GOENV=off (no go/env
    // file), GOWORK=off (no go.work), CGO_ENABLED=0 (no C compiler for #cgo
    // lines: `go list -compiled` runs nothing), GOPROXY=off, GOVCS=*:off; those
    // FETCH shares are GO_LOCKDOWN_ENV (src/fetch/go.ts).
    // Nothing here reads the tree's env files; build flags come from our settings.
    name: 'gopls',
    languages: ['go'],
    argv: ['/usr/bin/gopls'],
    env: {
      GOROOT,
      GOPATH: `${JAIL_HOME}/go`,
      GOFLAGS: '-mod=readonly',
      GOPROXY: 'off',
      GOSUMDB: 'off',
      ...GO_LOCKDOWN_ENV,
      CGO_ENABLED: '0',
      // gopls 0.16.1 is built by Debian with Go 1.22, whose go/types ranges over a
      // function only under this experiment (read from the environment at start):
      // without it every go 1.23 iterator loop is a false "cannot range over".
      GOEXPERIMENT: 'rangefunc',
    },
    ecosystem: 'go',
    rootMarkers: ['go.mod'],
    settings: { gopls: { hoverKind: 'FullDocumentation', linksInHover: false } },
    readiness: { kind: 'progress', expectProgress: true, graceMs: 0 },
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    editOps: ['rename', 'codeActions'],
    encodings: ['utf-16'],
    maxInFlight: 16,
    sessionFiles: (ws) => goSessionNotes(ws, GOROOT),
    // The version names gopls's package and the Go it runs (both pinned, both on /readyz).
    probe: async () => {
      const p = await probeBinary({
        path: '/usr/bin/gopls',
        debianPackage: 'gopls',
        absent: 'not installed (gopls missing; images/pins.env pins the Debian package)',
      });
      const go = p.available ? await installedGoVersion(GOROOT) : undefined;
      return p.available && p.version && go ? { ...p, version: `${p.version} (go ${go})` } : p;
    },
  };
}
