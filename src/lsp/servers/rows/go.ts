// Go: Debian's gopls, over the module cache FETCH filled.
import { JAIL_HOME } from '../../../jail/policy.js';
import { JAIL_ENV, probeBinary } from '../server-env.js';
import type { ServerRow } from '../server-row.js';

/** Go's own tree in the image (golang-go); gopls runs `go list` from it. */
export const GOROOT = '/usr/lib/go';

export function goRow(): ServerRow {
  return {
    // gopls (Debian 0.5.0 on go 1.19). Quirks:
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
    // Code from the tree: none. The go command it runs is the image's (GOROOT);
    // what could make go run another program is pinned here, where a tree cannot
    // reach: GOTOOLCHAIN=local (a go.mod `toolchain` line never downloads or
    // runs a Go), GOFLAGS set (so no -toolexec/-exec), GOENV=off (no go/env
    // file), GOWORK=off (no go.work), CGO_ENABLED=0 (no C compiler for #cgo
    // lines: `go list -compiled` runs nothing), GOPROXY=off, GOVCS=*:off.
    // Nothing here reads the tree's env files; build flags come from our settings.
    name: 'gopls',
    languages: ['go'],
    argv: ['/usr/bin/gopls'],
    env: {
      ...JAIL_ENV,
      GOROOT,
      GOPATH: `${JAIL_HOME}/go`,
      GOFLAGS: '-mod=readonly',
      GOPROXY: 'off',
      GOSUMDB: 'off',
      GOTOOLCHAIN: 'local',
      GOTELEMETRY: 'off',
      GOENV: 'off',
      GOWORK: 'off',
      GOVCS: '*:off',
      CGO_ENABLED: '0',
    },
    ecosystem: 'go',
    rootMarkers: ['go.mod'],
    settings: { gopls: { hoverKind: 'FullDocumentation', linksInHover: false } },
    readiness: { kind: 'progress', expectProgress: true, graceMs: 0 },
    hierarchyOps: ['incomingCalls', 'outgoingCalls'],
    encodings: ['utf-16'],
    maxInFlight: 16,
    probe: () =>
      probeBinary({ path: '/usr/bin/gopls', debianPackage: 'gopls', absent: 'not installed (gopls missing; images/pins.env pins the Debian package)' }),
  };
}
