// Docker cannot run on the machines that develop lspd, so the Dockerfile is kept
// honest here: every version it installs must be the version the local set-up
// (images/setup.sh) installs, read from the same images/pins.env, and every npm
// package comes from package-lock.json at the version package.json pins exactly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from './helpers/daemon.js';
import { realRows } from './helpers/lsp-harness.js';
import { JAVA, JDTLS_HOME, RUBY_LSP_HOME } from '../src/lsp/servers/rows/image-only.js';

const read = (p: string) => readFileSync(join(projectDir, p), 'utf8');
const dockerfile = read('Dockerfile');
const setup = read('images/setup.sh');

function pins(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of read('images/pins.env').split('\n')) {
    const m = /^([A-Z][A-Z0-9_]*)=(?:"([^"]*)"|(\S+))\s*$/.exec(line);
    if (m) out[m[1]!] = m[2] ?? m[3]!;
  }
  return out;
}

/** The Debian package name the Dockerfile derives from a pin variable: DEB_GOLANG_GO → golang-go (IMAGE_DEB_, BUILD_DEB_ alike). */
const debName = (v: string) =>
  v
    .replace(/^(IMAGE_|BUILD_)?DEB_/, '')
    .toLowerCase()
    .replace(/_/g, '-');

/** Stages that download an artefact a pin's sha256 then decides on, and the unpinned tools each may install to do so. */
const artefactStages: Record<string, string[]> = {
  jdtls: ['ca-certificates', 'curl'],
  // Compilers build ruby-lsp's C extensions from checked gems, as images/setup.sh's build the jail helper.
  'ruby-lsp': ['ca-certificates', 'curl', 'gcc', 'make', 'libc6-dev'],
};

/** setup.sh's rows: "name:file:$VAR". */
function setupRows(): { name: string; pinVar: string }[] {
  const block = /pkgs=\(([\s\S]*?)\n\)/.exec(setup)?.[1] ?? '';
  return [...block.matchAll(/"([^":]+):[^":]+:\$([A-Z0-9_]+)"/g)].map((m) => ({ name: m[1]!, pinVar: m[2]! }));
}

/** The Dockerfile's instructions with line continuations joined and comment lines dropped (as docker does). */
function instructions(): string[] {
  const lines = dockerfile.split('\n').filter((l) => !/^\s*#/.test(l));
  return lines
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '');
}

describe('image pins', () => {
  it('pins Node once: the Dockerfile NODE_VERSION is pins.env NODE_VERSION and every stage uses it', () => {
    const p = pins();
    assert.ok(p.NODE_VERSION, 'pins.env has NODE_VERSION');
    const arg = /^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1];
    assert.equal(arg, p.NODE_VERSION);
    const froms = instructions().filter((l) => /^FROM\s/i.test(l));
    assert.ok(froms.length >= 2, 'multi-stage');
    for (const f of froms) assert.match(f, /^FROM node:\$\{NODE_VERSION\}-bookworm-slim AS \S+$/, f);
    // And it satisfies package.json's engines.
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const min = /^>=(\d+)\.(\d+)/.exec(engines)!;
    const [maj, minor] = p.NODE_VERSION!.split('.').map(Number) as [number, number];
    assert.ok(maj > Number(min[1]) || (maj === Number(min[1]) && minor >= Number(min[2])), `${p.NODE_VERSION} vs engines ${engines}`);
  });

  it('installs exactly the Debian packages and versions setup.sh installs, the test-only ones in setup.sh alone', () => {
    const p = pins();
    const debVars = Object.keys(p).filter((k) => k.startsWith('DEB_'));
    const testOnly = (p.TEST_ONLY_DEB ?? '').split(/\s+/).filter(Boolean);
    const rows = setupRows();
    assert.ok(rows.length >= 5, 'setup.sh rows found');
    // setup.sh and the Dockerfile's derivation agree on every package name and pin.
    assert.deepEqual(rows.map((r) => r.pinVar).sort(), [...debVars].sort(), 'setup.sh installs every DEB_ pin, and only those');
    for (const r of rows) assert.equal(r.name, debName(r.pinVar), `setup.sh installs ${r.name} from ${r.pinVar}`);
    // The builder runs setup.sh itself; the runtime installs every DEB_ pin by that derivation.
    const run = instructions();
    assert.ok(
      run.some((l) => /^RUN bash images\/setup\.sh\b/.test(l)),
      'builder runs images/setup.sh',
    );
    const runtimeLoop = run.find((l) => l.includes('/opt/lspd/images/pins.env') && l.includes('apt-get install'));
    assert.ok(runtimeLoop, 'runtime installs from pins.env');
    // DEB_* and IMAGE_DEB_* (never BUILD_DEB_*), named as debName names them.
    assert.ok(runtimeLoop!.includes(String.raw`sed -n 's/^\(\(IMAGE_\)\{0,1\}DEB_[A-Z0-9_]*\)=.*/\1/p'`), runtimeLoop);
    assert.ok(runtimeLoop!.includes(`name=$(echo "\${var#IMAGE_}" | sed 's/^DEB_//' | tr 'A-Z_' 'a-z-')`), runtimeLoop);
    assert.match(runtimeLoop!, /pkgs="\$pkgs \$name=\$version"/);
    // The image-only Debian pins are the JDK and Ruby the jdtls and ruby-lsp rows run on.
    assert.deepEqual(
      Object.keys(p)
        .filter((k) => k.startsWith('IMAGE_DEB_'))
        .map(debName)
        .sort(),
      ['openjdk-17-jdk-headless', 'ruby'],
    );
    // Test-only pins: named in TEST_ONLY_DEB, each with a comment in pins.env saying
    // which test needs it; the runtime loop skips them, and so does the builder's
    // set-up (--runtime), as `npm start` does.
    assert.deepEqual(testOnly, ['DEB_NGINX'], 'nginx is the test-only package');
    const comments = read('images/pins.env')
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join('\n');
    for (const v of testOnly) {
      assert.ok(debVars.includes(v), `${v} is a DEB_ pin`);
      assert.match(comments, new RegExp(`#\\s+${debName(v)}: .*test/[\\w-]+\\.test\\.ts`), `pins.env says why ${v} is test-only`);
    }
    assert.match(runtimeLoop!, /case " \$TEST_ONLY_DEB " in \*" \$var "\*\) continue ;; esac;/);
    assert.ok(
      run.some((l) => /^RUN bash images\/setup\.sh --runtime\b/.test(l)),
      'the builder skips test-only packages',
    );
    assert.match(setup, /\[\[ " \$TEST_ONLY_DEB " == \*" \$var "\* \]\]; then\n\s+\[ \$runtime = 1 \] && continue/);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.prestart, 'bash images/setup.sh --runtime');
    assert.equal(scripts.pretest, 'bash images/setup.sh');
  });

  it('takes from Debian 13 only the Go packages TRIXIE_PACKAGES names, the same way in setup.sh and the image', () => {
    const p = pins();
    assert.deepEqual((p.TRIXIE_PACKAGES ?? '').split(/\s+/).sort(), ['golang-1.24-go', 'golang-1.24-src', 'golang-go', 'golang-src', 'gopls']);
    const script = read('images/trixie-apt.sh');
    // Those at the default priority, every other trixie version never (-1), in that order (apt takes the first match).
    assert.match(script, /Package: \$TRIXIE_PACKAGES\nPin: release n=trixie\nPin-Priority: 500\n\nPackage: \*\nPin: release n=trixie\nPin-Priority: -1/);
    // Before the apt-get update that reads it, in both places.
    assert.match(setup, /sh images\/trixie-apt\.sh\n\s*apt-get update/);
    const runtimeLoop = instructions().find((l) => l.includes('/opt/lspd/images/pins.env') && l.includes('apt-get install'));
    assert.match(runtimeLoop ?? '', /sh \/opt\/lspd\/images\/trixie-apt\.sh \/opt\/lspd\/images\/pins\.env;.*apt-get update/);
  });

  it('installs no other versioned Debian package and no unpinned one in the runtime stage', () => {
    const p = pins();
    const stages = dockerfile.split(/^FROM /m).slice(1);
    for (const stage of stages) {
      const name = /^\S+ AS (\S+)/.exec(stage)?.[1] ?? '?';
      const body = stage
        .split('\n')
        .filter((l) => !/^\s*#/.test(l))
        .join('\n')
        .replace(/\\\n/g, ' ');
      for (const m of body.matchAll(/apt-get install ([^;&\n]*)/g)) {
        const words = m[1]!.split(/\s+/).filter((w) => w && !w.startsWith('-'));
        for (const w of words) {
          if (w === '$pkgs') continue;
          if (w.includes('=')) {
            // Only name=${PIN} of pins.env, never a literal version (a second pin list).
            const pin = /^([a-z0-9.+-]+)=\$\{((?:IMAGE_|BUILD_)DEB_[A-Z0-9_]+)\}$/.exec(w);
            assert.ok(pin, `stage ${name}: literal pin ${w}`);
            assert.ok(p[pin[2]!], `stage ${name}: ${pin[2]} is not in pins.env`);
            assert.equal(pin[1], debName(pin[2]!), `stage ${name}: ${w}`);
            continue;
          }
          // Unpinned tools only where they carry (or build) bytes that a checksum then decides on.
          assert.ok(artefactStages[name]?.includes(w), `stage ${name}: unpinned package ${w}`);
        }
      }
    }
    // Every pin a build stage uses comes from pins.env, sourced in that stage.
    for (const stage of Object.keys(artefactStages)) {
      const body = stages.find((st) => st.startsWith(`node:\${NODE_VERSION}-bookworm-slim AS ${stage}\n`));
      assert.ok(body, `stage ${stage}`);
      assert.match(body!, /^COPY images\/pins\.env \/tmp\/pins\.env$/m, `${stage} reads pins.env`);
      assert.match(body!, /^RUN set -eu; \. \/tmp\/pins\.env;/m, `${stage} sources pins.env`);
    }
    assert.deepEqual(
      dockerfile
        .split('\n')
        .filter((l) => /^ARG /.test(l))
        .map((l) => l.split('=')[0]),
      ['ARG NODE_VERSION'],
      'no version lives in the Dockerfile but Node (FROM needs it before any file is read)',
    );
  });

  it('installs npm packages only from package-lock.json, at the exact versions package.json pins', () => {
    assert.doesNotMatch(
      dockerfile
        .split('\n')
        .filter((l) => !/^\s*#/.test(l))
        .join('\n'),
      /\bnpm (install|i|add)\b|\bnpx\b|\byarn\b|\bpnpm\b/,
    );
    assert.match(setup, /npm ci --ignore-scripts/);
    const pkg = JSON.parse(read('package.json')) as Record<string, Record<string, string> | undefined>;
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };
    for (const field of ['dependencies', 'optionalDependencies', 'devDependencies']) {
      for (const [name, spec] of Object.entries(pkg[field] ?? {})) {
        // An alias (`svelte5: npm:svelte@5.57.3`) pins a second major of a package a server depends on.
        const [, alias, range = spec] = /^npm:(@?[^@]+)@(.+)$/.exec(spec) ?? [];
        assert.match(range, /^\d+\.\d+\.\d+(-[\w.]+)?$/, `${name}@${spec} is not an exact pin`);
        assert.equal(lock.packages[`node_modules/${name}`]?.version, range, `${name}: package-lock has another version`);
        if (alias) assert.equal((lock.packages[`node_modules/${name}`] as { name?: string }).name, alias, `${name}: package-lock has another package`);
      }
    }
  });

  it('pins the Rust toolchain as Debian 13 packages in a debootstrapped root, made by setup.sh in the image too', () => {
    const p = pins();
    assert.equal(p.ROOT13_SUITE, 'trixie');
    assert.match(p.ROOT13_MIRROR ?? '', /^http:\/\/deb\.debian\.org\/debian$/);
    const root13 = Object.keys(p).filter((k) => k.startsWith('ROOT13_DEB_'));
    assert.deepEqual(root13.map((k) => debName(k.replace(/^ROOT13_/, ''))).sort(), ['cargo', 'rust-analyzer', 'rust-src', 'rustc']);
    // One release for all four: rust-analyzer reads the rust-src of the rustc it runs with.
    assert.equal(new Set(root13.map((k) => p[k])).size, 1);
    for (const k of root13) assert.match(p[k]!, /^1\.\d+\.\d+\+dfsg\d*-\d+(\+deb13u\d+)?$/, k);
    // setup.sh makes it (debootstrap pinned among its Debian packages), checked by apt inside the root.
    assert.match(setup, /^bash images\/debian13-root\.sh$/m);
    assert.ok(setupRows().some((r) => r.name === 'debootstrap' && r.pinVar === 'DEB_DEBOOTSTRAP'));
    const script = read('images/debian13-root.sh');
    assert.match(script, /debootstrap --variant=minbase --keyring=\/usr\/share\/keyrings\/debian-archive-keyring\.gpg/);
    assert.match(script, /chroot "\$new" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "\$\{pkgs\[@\]\}"/);
    assert.doesNotMatch(script, /--allow-unauthenticated|--no-check-gpg|AllowInsecure/);
    // The image: the builder runs the same set-up; the runtime copies the root. No GitHub download.
    assert.match(dockerfile, /^COPY --from=builder \/opt\/lspd\/debian13\/ \/opt\/lspd\/debian13\/$/m);
    assert.doesNotMatch(dockerfile, /github\.com|rust-analyzer-x86_64/);
    assert.equal(p.RUST_ANALYZER_VERSION, undefined);
  });

  it('pins jdtls by its dated milestone and sha256, on the JDK the row runs, unpacked where the row looks', () => {
    const p = pins();
    assert.match(p.JDTLS_VERSION ?? '', /^\d+\.\d+\.\d+$/);
    assert.match(p.JDTLS_TIMESTAMP ?? '', /^\d{12}$/, 'the dated milestone build');
    assert.match(p.JDTLS_SHA256 ?? '', /^[0-9a-f]{64}$/);
    const all = instructions().join('\n');
    assert.match(all, /download\.eclipse\.org\/jdtls\/milestones\/\$\{JDTLS_VERSION\}\/jdt-language-server-\$\{JDTLS_VERSION\}-\$\{JDTLS_TIMESTAMP\}\.tar\.gz/);
    assert.match(
      all,
      /echo "\$\{JDTLS_SHA256\}  \/tmp\/jdtls\.tar\.gz" \| sha256sum -c -; .*tar -xzf \/tmp\/jdtls\.tar\.gz -C \/usr\/local\/share\/jdtls/,
      'checked before it is unpacked',
    );
    assert.match(all, /^COPY --from=jdtls \/usr\/local\/share\/jdtls\/ \/usr\/local\/share\/jdtls\/$/m);
    const row = realRows().find((r) => r.name === 'jdtls')!;
    assert.equal(row.argv[0], JAVA);
    assert.match(JAVA, /java-17-openjdk/, 'the JDK IMAGE_DEB_OPENJDK_17_JDK_HEADLESS installs');
    assert.ok(row.argv.includes(`${JDTLS_HOME}/launcher.jar`) && all.includes('ln -s "$1" launcher.jar'));
    // Its writable configuration area is in the jail's tmp; the shipped one is shared, read-only.
    assert.deepEqual(row.argv.slice(row.argv.indexOf('-configuration'), row.argv.indexOf('-configuration') + 2), ['-configuration', '/tmp/jdtls-config']);
    assert.ok(
      row.argv.includes(`-Dosgi.sharedConfiguration.area=${JDTLS_HOME}/config_linux`) && row.argv.includes('-Dosgi.sharedConfiguration.area.readOnly=true'),
    );
  });

  it('pins ruby-lsp and every gem it needs by version and sha256, installed with no resolution', () => {
    const p = pins();
    const gems = Object.entries(p).filter(([k]) => k.startsWith('RUBY_GEM_'));
    assert.deepEqual(gems.map(([, v]) => v.split('@')[0]).sort(), ['language_server-protocol', 'logger', 'prism', 'rbs', 'ruby-lsp', 'sorbet-runtime']);
    for (const [k, v] of gems) assert.match(v, /^[a-z][a-z0-9_-]*@\d+(\.\d+)+@[0-9a-f]{64}$/, k);
    const all = instructions().join('\n');
    assert.match(
      all,
      /curl -fsSL -o "\/tmp\/gems\/\$\{name\}-\$\{version\}\.gem" "https:\/\/rubygems\.org\/gems\/\$\{name\}-\$\{version\}\.gem"; +echo "\$\{sha\}  \/tmp\/gems\/\$\{name\}-\$\{version\}\.gem" \| sha256sum -c -;/,
    );
    assert.match(all, /gem install --local --ignore-dependencies --no-document/);
    assert.doesNotMatch(all.replace(/gem install --local --ignore-dependencies/g, ''), /gem install|bundle install/);
    assert.match(all, /^COPY --from=ruby-lsp \/usr\/local\/lib\/ruby-lsp\/ \/usr\/local\/lib\/ruby-lsp\/$/m);
    const row = realRows().find((r) => r.name === 'ruby-lsp')!;
    assert.equal(row.argv[0], `${RUBY_LSP_HOME}/bin/ruby-lsp`);
    // BUNDLE_GEMFILE set (to the image's empty Gemfile): ruby-lsp composes and installs no bundle.
    assert.equal(row.env.BUNDLE_GEMFILE, `${RUBY_LSP_HOME}/Gemfile`);
    assert.match(all, /> \/usr\/local\/lib\/ruby-lsp\/Gemfile;/);
    assert.equal(row.env.GEM_PATH, RUBY_LSP_HOME);
  });

  it('ships the jail helper the set-up builds, and runs the daemon from source with tsx', () => {
    assert.match(dockerfile, /^COPY --from=builder \/opt\/lspd\/jail\/build\/ jail\/build\/$/m);
    assert.match(dockerfile, /^CMD \["node", "--import", "tsx", "src\/main\.ts"\]$/m);
    assert.match(dockerfile, /^EXPOSE 7420$/m);
  });
});
