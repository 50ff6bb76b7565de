import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, coordinateKey, createResolver, decodeGoEscaped, resolveCoordinate, type Coordinate } from './coordinates.js';

const versions: Record<string, string> = {
  '/src/node_modules/dep': '1.2.3',
  '/src/node_modules/@scope/pkg': '2.0.0-beta.1',
  '/deps/npm/top/node_modules/lodash': '4.17.21',
  '/src/node_modules/.pnpm/x@1.0.0/node_modules/x': '1.0.0',
  '/src/node_modules/evil': '1.0.0"; rm -rf /',
};
const readPackageVersion = (dir: string) => versions[dir];

/** An external coordinate as `ecosystem module@version path`; anything else as its kind, so a wrong kind fails too. */
const ext = (c: Coordinate) => (c.kind === 'external' ? `${c.ecosystem} ${c.module}@${c.version} ${c.path}` : c.kind);

test('tree files are root-relative', async () => {
  assert.deepEqual(await resolveCoordinate('file:///src/src/app.ts'), { kind: 'tree', path: 'src/app.ts', jailPath: '/src/src/app.ts' });
  assert.deepEqual(await resolveCoordinate('/src/a%20b.ts'), { kind: 'tree', path: 'a%20b.ts', jailPath: '/src/a%20b.ts' });
  assert.deepEqual(await resolveCoordinate('file:///src/a%20b.ts'), { kind: 'tree', path: 'a b.ts', jailPath: '/src/a b.ts' });
  assert.deepEqual(await resolveCoordinate('file:///src/vendor/example.com/dep/x.go'), {
    kind: 'tree',
    path: 'vendor/example.com/dep/x.go',
    jailPath: '/src/vendor/example.com/dep/x.go',
  });
});

test('Go module cache paths become module@version coordinates, with !-escapes decoded', async () => {
  assert.deepEqual(await resolveCoordinate('file:///deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go'), {
    kind: 'external',
    ecosystem: 'go',
    module: 'example.com/dep',
    version: 'v1.0.0',
    path: 'greet.go',
    jailPath: '/deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go',
  });
  assert.equal(
    ext(await resolveCoordinate('file:///deps/go/pkg/mod/github.com/!burnt!sushi/toml@v1.3.2-!r!c1/internal/x.go')),
    'go github.com/BurntSushi/toml@v1.3.2-RC1 internal/x.go',
  );
  // %40 is how vscode-uri writes @
  assert.equal(ext(await resolveCoordinate('file:///deps/go/pkg/mod/example.com/dep%40v1.0.0/greet.go')), 'go example.com/dep@v1.0.0 greet.go');
  // a module that ships a node_modules directory is still the Go module
  assert.equal(ext(await resolveCoordinate('/deps/go/pkg/mod/example.com/web@v0.1.0/node_modules/x/i.js')), 'go example.com/web@v0.1.0 node_modules/x/i.js');
});

test('bad Go cache paths are other', async () => {
  for (const p of [
    '/deps/go/pkg/mod/cache/download/example.com/dep/@v/v1.0.0.zip',
    '/deps/go/pkg/mod/example.com/dep@v1.0.0', // the directory, no file
    '/deps/go/pkg/mod/example.com/dep/greet.go', // no @version
    '/deps/go/pkg/mod/github.com/BurntSushi/toml@v1.0.0/x.go', // upper case is never in escaped form
    '/deps/go/pkg/mod/example.com/!!x@v1.0.0/x.go',
    '/deps/go/pkg/mod/example.com/x!@v1.0.0/x.go',
    '/deps/go/pkg/mod/example.com/x@1.0.0/x.go', // versions start with v
    '/deps/go/pkg/mod/example.com/x@/x.go',
    '/deps/go/pkg/mod',
  ]) {
    assert.equal((await resolveCoordinate(p)).kind, 'other', p);
  }
  assert.deepEqual(await resolveCoordinate('/deps/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.22.0.linux-amd64/src/fmt/print.go'), {
    kind: 'other',
    reason: 'toolchain',
  });
});

test('node_modules packages become npm coordinates with their version read through the callback', async () => {
  const r = createResolver({ readPackageVersion });
  assert.deepEqual(await r('file:///src/node_modules/dep/lib/index.d.ts'), {
    kind: 'external',
    ecosystem: 'npm',
    module: 'dep',
    version: '1.2.3',
    path: 'lib/index.d.ts',
    jailPath: '/src/node_modules/dep/lib/index.d.ts',
  });
  for (const [uri, want] of [
    ['file:///src/node_modules/%40scope/pkg/index.js', 'npm @scope/pkg@2.0.0-beta.1 index.js'],
    ['/deps/npm/top/node_modules/lodash/map.js', 'npm lodash@4.17.21 map.js'],
    ['/src/node_modules/.pnpm/x@1.0.0/node_modules/x/i.js', 'npm x@1.0.0 i.js'],
    ['/src/packages/web/node_modules/dep/i.js', 'npm dep@unknown i.js'],
  ] as const) {
    assert.equal(ext(await r(uri)), want, uri);
  }
});

test('versions from package.json are checked; a throwing reader is unknown', async () => {
  assert.equal(ext(await resolveCoordinate('/src/node_modules/evil/i.js', { readPackageVersion })), 'npm evil@unknown i.js');
  const throwing = () => {
    throw new Error('EACCES /host/secret');
  };
  const rejecting = async () => Promise.reject(new Error('x'));
  for (const reader of [throwing, rejecting, undefined]) {
    const c = await resolveCoordinate('/src/node_modules/dep/i.js', reader ? { readPackageVersion: reader } : undefined);
    assert.equal(ext(c), 'npm dep@unknown i.js');
  }
});

test('the resolver reads each package version once', async () => {
  let reads = 0;
  const r = createResolver({ readPackageVersion: (d) => (reads++, versions[d]) });
  await Promise.all([r('/src/node_modules/dep/a.js'), r('/src/node_modules/dep/b.js'), r('/src/node_modules/dep/a.js')]);
  assert.equal(reads, 1);
});

test('odd node_modules entries are other', async () => {
  for (const p of [
    '/src/node_modules/.bin/tsc',
    '/src/node_modules/.package-lock.json',
    '/src/node_modules/dep', // the directory itself
    '/src/node_modules/@scope', // scope without name
    '/src/node_modules/@scope/pkg',
    '/src/node_modules',
    '/src/node_modules/@/x/i.js',
  ]) {
    assert.equal((await resolveCoordinate(p)).kind, 'other', p);
  }
});

test('anything outside the tree and deps is other, and never unsafe input is let through', async () => {
  const cases: [string, string][] = [
    ['file:///etc/passwd', 'outside'],
    ['/proc/self/environ', 'outside'],
    ['file:///src/../etc/passwd', 'unsafe'],
    ['file:///src/%2e%2e/etc/passwd', 'unsafe'],
    ['file:///src/a/..%2F..%2Fetc/passwd', 'unsafe'],
    ['file:///src/a%00b', 'unsafe'],
    ['file://host/src/a.ts', 'unsafe'],
    ['untitled:Untitled-1', 'not-file'],
    ['https://example.com/src/a.ts', 'not-file'],
    ['src/a.ts', 'not-file'],
    ['file:///srcx/a.ts', 'outside'],
    ['file:///src', 'malformed'],
    ['file:///opt/lspd/node_modules/pyright/dist/typeshed-fallback/stdlib/builtins.pyi', 'toolchain'],
    ['file:///usr/local/go/src/fmt/print.go', 'toolchain'],
    ['file:///opt/lspd/node_modules/typescript/lib/lib.es5.d.ts', 'outside'],
    ['/deps/python/x.py', 'outside'],
  ];
  for (const [uri, reason] of cases) assert.deepEqual(await resolveCoordinate(uri), { kind: 'other', reason }, uri);
  assert.equal(classify(undefined as unknown as string).kind, 'other');
});

test('decodeGoEscaped', () => {
  assert.equal(decodeGoEscaped('github.com/!azure/azure-sdk'), 'github.com/Azure/azure-sdk');
  assert.equal(decodeGoEscaped('!a!b!c'), 'ABC');
  assert.equal(decodeGoEscaped('a!'), undefined);
  assert.equal(decodeGoEscaped('a!1'), undefined);
  assert.equal(decodeGoEscaped('A'), undefined);
});

test('coordinate keys separate tree and external files', () => {
  assert.equal(coordinateKey({ kind: 'tree', path: 'a.ts', jailPath: '/src/a.ts' }), 't:a.ts');
  assert.equal(coordinateKey({ kind: 'external', ecosystem: 'npm', module: 'a', version: '1', path: 'b.js', jailPath: '/x' }), 'e:npm:a@1/b.js');
});

test('composer vendor packages are external only when installed.json names them', async () => {
  const installed: Record<string, Record<string, string>> = {
    '/src/vendor': { 'acme/greeter': '1.0.0', 'acme/odd': 'x"; rm' },
    '/src/app/vendor': { 'sym/fony': 'v6.4.1' },
  };
  const reads: string[] = [];
  const r = createResolver({
    readComposerVersion: (dir, name) => (reads.push(`${dir}:${name}`), installed[dir]?.[name]),
  });
  assert.deepEqual(await r('file:///src/vendor/acme/greeter/src/Greeter.php'), {
    kind: 'external',
    ecosystem: 'composer',
    module: 'acme/greeter',
    version: '1.0.0',
    path: 'src/Greeter.php',
    jailPath: '/src/vendor/acme/greeter/src/Greeter.php',
  });
  assert.equal(ext(await r('/src/app/vendor/sym/fony/Component/X.php')), 'composer sym/fony@v6.4.1 Component/X.php');
  // A version that is not one is "unknown", never passed on.
  assert.equal(ext(await r('/src/vendor/acme/odd/a.php')), 'composer acme/odd@unknown a.php');
  // A Go vendor dir (no installed.json names it) stays a tree path.
  assert.deepEqual(await r('/src/vendor/github.com/x/y/z.go'), {
    kind: 'tree',
    path: 'vendor/github.com/x/y/z.go',
    jailPath: '/src/vendor/github.com/x/y/z.go',
  });
  // Names composer could not have written are never looked up.
  assert.equal((await r('/src/vendor/Acme/Greeter/a.php')).kind, 'tree');
  assert.ok(!reads.some((x) => x.includes('Acme')));
  // Without a reader (no FETCH wired) it is the tree path it is.
  assert.equal((await resolveCoordinate('/src/vendor/acme/greeter/src/Greeter.php')).kind, 'tree');
});

test('files in a fetched site-packages belong to the distribution whose RECORD lists them', async () => {
  const dists: Record<string, { name: string; version: string }> = {
    greet_lib: { name: 'greet-lib', version: '1.0.0' },
    'six.py': { name: 'six', version: '1.16.0' },
  };
  const r = createResolver({ readPythonDist: (site, top) => (site === '/deps/python/top/site-packages' ? dists[top] : undefined) });
  assert.deepEqual(await r('file:///deps/python/top/site-packages/greet_lib/core.py'), {
    kind: 'external',
    ecosystem: 'python',
    module: 'greet-lib',
    version: '1.0.0',
    path: 'greet_lib/core.py',
    jailPath: '/deps/python/top/site-packages/greet_lib/core.py',
  });
  assert.equal(ext(await r('/deps/python/top/site-packages/six.py')), 'python six@1.16.0 six.py');
  // Not in any RECORD: named by its directory, version unknown.
  assert.equal(ext(await r('/deps/python/ws/svc/site-packages/orphan/x.py')), 'python orphan@unknown orphan/x.py');
  assert.deepEqual(await r('/deps/python/top/site-packages'), { kind: 'other', reason: 'malformed' });
});

test('Cargo: unpacked crates in CARGO_HOME are crate@version; caches and checkouts are not rendered', async () => {
  const at = (p: string) => resolveCoordinate(`file:///deps/cargo/${p}`);
  assert.equal(ext(await at('registry/src/index.crates.io-1949cf8c6b5b557f/serde-1.0.210/src/de/mod.rs')), 'cargo serde@1.0.210 src/de/mod.rs');
  // A name with a dash and a digit, a pre-release version with dashes, build metadata.
  assert.equal(ext(await at('registry/src/x/windows-targets-0.52.6/src/lib.rs')), 'cargo windows-targets@0.52.6 src/lib.rs');
  assert.equal(ext(await at('registry/src/x/foo-2-1.0.0-rc-1/lib.rs')), 'cargo foo-2@1.0.0-rc-1 lib.rs');
  assert.equal(ext(await at('registry/src/x/jemalloc-sys-0.5.4+5.3.0-patched/build.rs')), 'cargo jemalloc-sys@0.5.4+5.3.0-patched build.rs');
  for (const p of ['registry/cache/x/serde-1.0.210.crate', 'registry/index/x/config.json', 'git/checkouts/a/b/src/lib.rs', 'config.toml']) {
    assert.equal((await at(p)).kind, 'other', p);
  }
  for (const p of ['registry/src/x/serde/src/lib.rs', 'registry/src/x/se.rde-1.0.0/lib.rs', 'registry/src/x/serde-1.0.210']) {
    assert.equal((await at(p)).kind, 'other', p);
  }
});

test("Rust's standard library in rust-src is external at the toolchain's version; elsewhere in the toolchain it is not rendered", async () => {
  const resolve = createResolver({ rustSrcVersion: '1.85.1' });
  assert.equal(ext(await resolve('file:///usr/lib/rustlib/src/rust/library/alloc/src/vec/mod.rs')), 'rust alloc@1.85.1 src/vec/mod.rs');
  // Debian's real path names its version itself.
  assert.equal(ext(await resolve('file:///usr/src/rustc-1.85.1/library/core/src/mem/mod.rs')), 'rust core@1.85.1 src/mem/mod.rs');
  assert.equal(ext(await resolveCoordinate('file:///usr/lib/rustlib/src/rust/library/std/src/lib.rs')), 'rust std@unknown src/lib.rs');
  assert.equal(
    ext(await createResolver({ rustSrcVersion: '1.85; rm -rf /' })('/usr/lib/rustlib/src/rust/library/std/src/lib.rs')),
    'rust std@unknown src/lib.rs',
  );
  for (const p of [
    '/usr/lib/rustlib/src/rust/src/tools/x.rs',
    '/usr/lib/rustlib/src/rust/library/Cargo.toml',
    '/usr/lib/rustlib/x86_64-unknown-linux-gnu/lib/x.rs',
  ]) {
    assert.equal((await resolve(p)).kind, 'other', p);
  }
});
