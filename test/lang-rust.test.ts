// Rust: Debian 13's rust-analyzer in the real SERVE jail over the Debian 13 root's
// /usr, on test/fixtures/rust-ws: a two-crate Cargo workspace (app uses shapes by
// path) with one registry dependency, tinyfmt 1.2.0, served by a sparse registry
// the test runs on 127.0.0.1 (test/helpers/cargo-registry.ts) and fetched by the
// real FETCH phase (`cargo fetch --locked`, through the egress proxy). Both tinyfmt
// and app have a build.rs that would leave a marker: neither ever runs. The tree's
// .cargo/config.toml sends crates.io to a port nothing listens on: read by cargo in
// FETCH the fetch would fail, read in SERVE (rust-analyzer's cargo metadata, offline)
// the workspace would not load; every answer below says it is read in neither.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { startCargoRegistry, type CargoRegistry } from './helpers/cargo-registry.js';
import { cannotJail, fetchSettled, getJson, lineOf, position } from './helpers/lsp-harness.js';
import { lacksBinaries } from './helpers/host.js';
import { acmeRoot, assertClean, at, completeDiagnostics, langSuite, locs, type Answer, type Loc } from './helpers/lang-suite.js';
import { DEFAULT_DEBIAN13_ROOT } from '../src/config.js';

const ROOT13 = DEFAULT_DEBIAN13_ROOT;
const skip =
  cannotJail() ??
  lacksBinaries(
    'the Debian 13 root with rust-analyzer, rustc and cargo (images/setup.sh)',
    `${ROOT13}/usr/bin/rust-analyzer`,
    `${ROOT13}/usr/bin/rustc`,
    `${ROOT13}/usr/bin/cargo`,
  );
const FX = 'rust-ws';
const ws = acmeRoot(FX);
const noLock = acmeRoot('rust-nolock');

type Node = { id: number; parent?: number; name: string; path?: string; range?: { start: { line: number } } };

/** Every file under dir whose name is `name` (the markers a build script would leave). */
function markersUnder(dir: string, name: RegExp): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => name.test(f.split('/').pop()!));
}

// The registry's URL is the daemon's configuration, so it runs before the daemon starts.
const registry: CargoRegistry | undefined = skip ? undefined : await startCargoRegistry();

describe('Rust (rust-analyzer on the Debian 13 root) in the SERVE jail', { skip }, () => {
  after(() => registry?.close());
  const { daemon, ask } = langSuite({
    server: 'rust-analyzer',
    uploads: [
      [ws, FX],
      [noLock, 'rust-nolock'],
    ],
    start: () => ({ env: { LSPD_CARGO_REGISTRY: registry!.url, LSPD_FETCH_REGISTRIES: registry!.authority } }),
  });

  test('the fetch: cargo fetch --locked got tinyfmt from the local registry; no build script ran', async () => {
    const f = await fetchSettled(daemon().url, ws);
    assert.equal(f.state, 'done', JSON.stringify(f));
    const root = await getJson(daemon().url, `/v1/roots/${ws.org}/${ws.repo}/${ws.sha}`);
    const steps = (root.body.fetch as { ecosystems: { ecosystem: string; dir: string; state: string }[] }).ecosystems;
    assert.deepEqual(steps, [{ ecosystem: 'cargo', dir: '', state: 'done' }]);
    assert.ok(registry!.hits.includes('/dl/tinyfmt/1.2.0'), registry!.hits.join(','));
    assert.deepEqual(markersUnder(daemon().config.dataDir, /BUILD_RS_RAN$/), []);
  });

  test('definition crosses crates, first answer right', async () => {
    const a = await ask(ws, { op: 'definition', path: 'app/src/main.rs', ...position(FX, 'app/src/main.rs', 'total_area(&[') });
    assert.equal(a.incomplete, false);
    assert.deepEqual(at(a), [`shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'pub fn total_area')}`]);
    assert.match(locs(a)[0]!.preview!, /pub fn total_area/);
    assert.deepEqual(a.dependencies, { state: 'done' });
  });

  test('references of a trait method across crates', async () => {
    const pos = position(FX, 'shapes/src/lib.rs', 'fn area(&self) -> f64;', 'fn '.length);
    const a = await ask(ws, { op: 'references', path: 'shapes/src/lib.rs', ...pos, includeDeclaration: false });
    assert.deepEqual(
      at(a).sort(),
      [
        `app/src/main.rs:${lineOf(FX, 'app/src/main.rs', 'areas.push(square.area())')}`,
        `app/src/main.rs:${lineOf(FX, 'app/src/main.rs', 'areas.push(circle.area())')}`,
        // rust-analyzer counts the impls' methods as references of the trait's.
        `shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'impl Area for Square') + 1}`,
        `shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'impl Area for Circle') + 1}`,
        `shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'sum += s.area()')}`,
      ].sort(),
    );
  });

  test('hover of a trait method shows its signature and doc comment', async () => {
    const a = await ask(ws, { op: 'hover', path: 'app/src/main.rs', ...position(FX, 'app/src/main.rs', 'area());', 0) });
    assert.match(String(a.contents), /fn area\(&self\) -> f64/);
    assert.match(String(a.contents), /The area in square units/);
    assert.ok(!String(a.contents).includes(ROOT13), 'no host path');
  });

  test('implementations of a trait', async () => {
    const pos = position(FX, 'shapes/src/lib.rs', 'pub trait Area', 'pub trait '.length);
    const a = await ask(ws, { op: 'implementation', path: 'shapes/src/lib.rs', ...pos });
    assert.deepEqual(
      at(a).sort(),
      [
        `shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'impl Area for Square')}`,
        `shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', 'impl Area for Circle')}`,
      ].sort(),
    );
  });

  test('incoming calls of a function across crates', async () => {
    const pos = position(FX, 'shapes/src/lib.rs', 'pub fn total_area', 'pub fn '.length);
    const a = await ask(ws, { op: 'incomingCalls', path: 'shapes/src/lib.rs', ...pos });
    const nodes = a.nodes as Node[];
    assert.deepEqual(
      nodes.map((n) => `${n.parent ?? '-'} ${n.name} ${n.path}:${n.range?.start.line}`),
      // A node's range is the item's, doc comment included.
      [
        `- total_area shapes/src/lib.rs:${lineOf(FX, 'shapes/src/lib.rs', '/// The sum of every')}`,
        `0 main app/src/main.rs:${lineOf(FX, 'app/src/main.rs', 'fn main()')}`,
      ],
    );
  });

  test('diagnostics: the type error is found; a clean file is clean', async () => {
    // rust-analyzer's own type check (no cargo check: it would build). Its type-mismatch
    // diagnostic is experimental in 1.85 (off), E0063 is not.
    const bad = await ask(ws, { op: 'diagnostics', path: 'app/src/broken.rs' });
    const diags = completeDiagnostics(bad);
    const err = diags.find((d) => d.severity === 'error');
    assert.ok(err, JSON.stringify(bad));
    assert.equal(err.range.start.line, lineOf(FX, 'app/src/broken.rs', 'Square {}'));
    assert.equal(err.code, 'E0063');
    assert.match(err.message, /missing structure fields/);
    assertClean(await ask(ws, { op: 'diagnostics', path: 'shapes/src/lib.rs' }));
  });

  test('Vec::push lands in the root toolchain rust-src, as external (alloc), and core::mem::size_of in core', async () => {
    const def = async (needle: string) => {
      const a = await ask(ws, { op: 'definition', path: 'app/src/main.rs', ...position(FX, 'app/src/main.rs', needle, 0) });
      const l = locs(a) as (Loc & { read?: unknown })[];
      assert.equal(l.length, 1, JSON.stringify(a));
      // Not readable by the files route: the toolchain is not among the root's dependency dirs.
      assert.equal(l[0]!.read, undefined);
      return { external: l[0]!.external, module: l[0]!.module, version: l[0]!.version, path: l[0]!.path };
    };
    assert.deepEqual(await def('push(square'), { external: true, module: 'alloc', version: '1.85.1', path: 'src/vec/mod.rs' });
    assert.deepEqual(await def('size_of::<f64>'), { external: true, module: 'core', version: '1.85.1', path: 'src/mem/mod.rs' });
  });

  test("the dependency's type lands on {module, version}, readable with the files route", async () => {
    const a = await ask(ws, { op: 'definition', path: 'app/src/main.rs', ...position(FX, 'app/src/main.rs', 'Padded::new(label', 0) });
    const l = locs(a) as (Loc & { read?: { from: string; path: string } })[];
    assert.equal(l.length, 1, JSON.stringify(a));
    assert.deepEqual(
      { external: l[0]!.external, module: l[0]!.module, version: l[0]!.version, path: l[0]!.path, line: l[0]!.range.start.line },
      { external: true, module: 'tinyfmt', version: '1.2.0', path: 'src/lib.rs', line: 3 },
    );
    assert.ok(l[0]!.read, JSON.stringify(l[0]));
    const r = await getJson(daemon().url, `/v1/roots/${ws.org}/${ws.repo}/${ws.sha}/files/${l[0]!.read.path}?from=deps&start=3&end=4`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body as Answer).text, 'pub struct Padded {\n');
  });

  test('/readyz: the version, where the toolchain lives, and the hierarchy and edit ops its session declared', async () => {
    const r = await getJson(daemon().url, '/readyz');
    const ra = (r.body.servers as Record<string, Answer>)['rust-analyzer']!;
    assert.deepEqual(ra, {
      available: true,
      version: '1.85.1+dfsg1-1+deb13u1',
      toolchain:
        "Debian 13 root (LSPD_DEBIAN13_ROOT), bound as the jail's /usr: rustc 1.85.1+dfsg1-1+deb13u1, cargo 1.85.1+dfsg1-1+deb13u1, rust-src 1.85.1+dfsg1-1+deb13u1",
      hierarchy_ops: ['incomingCalls', 'outgoingCalls'],
      hierarchy_ops_from: 'row',
      edit_ops: ['rename', 'codeActions'],
      edit_ops_from: 'session',
    });
    // The declaration agrees with what the live session advertises.
    const sessions = [
      ...(daemon().lsp.pool as unknown as { sessions: Map<string, { row: { name: string }; supports(p: string): boolean }> }).sessions.values(),
    ];
    const s = sessions.find((x) => x.row.name === 'rust-analyzer');
    assert.ok(s);
    assert.equal(s.supports('callHierarchyProvider'), true);
    assert.equal(s.supports('typeHierarchyProvider'), false);
    assert.equal(s.supports('renameProvider'), true);
    assert.equal(s.supports('codeActionProvider'), true);
  });

  test('after serving, still no build script has run anywhere', () => {
    assert.deepEqual(markersUnder(daemon().config.dataDir, /BUILD_RS_RAN$/), []);
  });

  test('a tree with no Cargo.lock is reported as the others are, and still served', async () => {
    const f = await fetchSettled(daemon().url, noLock);
    assert.equal(f.state, 'refused', JSON.stringify(f));
    const root = await getJson(daemon().url, `/v1/roots/${noLock.org}/${noLock.repo}/${noLock.sha}`);
    const steps = (root.body.fetch as { ecosystems: { ecosystem: string; state: string; reason: string }[] }).ecosystems;
    assert.equal(steps.length, 1);
    assert.equal(steps[0]!.ecosystem, 'cargo');
    assert.match(steps[0]!.reason, /Cargo\.toml has no Cargo\.lock/);
  });
});
