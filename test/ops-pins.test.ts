// Docker cannot run on the machines that develop lspd, so the Dockerfile is kept
// honest here: every version it installs must be the version the local set-up
// (images/setup.sh) installs, read from the same images/pins.env, and every npm
// package comes from package-lock.json at the version package.json pins exactly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from './helpers/daemon.js';

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

/** The Debian package name the Dockerfile derives from a pin variable: DEB_GOLANG_GO → golang-go. */
const debName = (v: string) => v.slice('DEB_'.length).toLowerCase().replace(/_/g, '-');

/** setup.sh's rows: "name:file:$VAR". */
function setupRows(): { name: string; pinVar: string }[] {
  const block = /pkgs=\(([\s\S]*?)\n\)/.exec(setup)?.[1] ?? '';
  return [...block.matchAll(/"([^":]+):[^":]+:\$([A-Z0-9_]+)"/g)].map((m) => ({ name: m[1]!, pinVar: m[2]! }));
}

/** The Dockerfile's instructions with line continuations joined and comment lines dropped (as docker does). */
function instructions(): string[] {
  const lines = dockerfile.split('\n').filter((l) => !/^\s*#/.test(l));
  return lines.join('\n').replace(/\\\n/g, ' ').split('\n').filter((l) => l.trim() !== '');
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
    assert.ok(run.some((l) => /^RUN bash images\/setup\.sh\b/.test(l)), 'builder runs images/setup.sh');
    const runtimeLoop = run.find((l) => l.includes('/opt/lspd/images/pins.env') && l.includes('apt-get install'));
    assert.ok(runtimeLoop, 'runtime installs from pins.env');
    assert.match(runtimeLoop!, /sed -n 's\/\^\\\(DEB_\[A-Z0-9_\]\*\\\)=\.\*\/\\1\/p'/);
    assert.match(runtimeLoop!, /tr 'A-Z_' 'a-z-'/);
    assert.match(runtimeLoop!, /pkgs="\$pkgs \$name=\$version"/);
    // Test-only pins: named in TEST_ONLY_DEB, each with a comment in pins.env saying
    // which test needs it; the runtime loop skips them, and so does the builder's
    // set-up (--runtime), as `npm start` does.
    assert.deepEqual(testOnly, ['DEB_NGINX'], 'nginx is the test-only package');
    const comments = read('images/pins.env').split('\n').filter((l) => l.startsWith('#')).join('\n');
    for (const v of testOnly) {
      assert.ok(debVars.includes(v), `${v} is a DEB_ pin`);
      assert.match(comments, new RegExp(`#\\s+${debName(v)}: .*test/[\\w-]+\\.test\\.ts`), `pins.env says why ${v} is test-only`);
    }
    assert.match(runtimeLoop!, /case " \$TEST_ONLY_DEB " in \*" \$var "\*\) continue ;; esac;/);
    assert.ok(run.some((l) => /^RUN bash images\/setup\.sh --runtime\b/.test(l)), 'the builder skips test-only packages');
    assert.match(setup, /\[\[ " \$TEST_ONLY_DEB " == \*" \$var "\* \]\]; then\n\s+\[ \$runtime = 1 \] && continue/);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.prestart, 'bash images/setup.sh --runtime');
    assert.equal(scripts.pretest, 'bash images/setup.sh');
  });

  it('installs no other versioned Debian package and no unpinned one in the runtime stage', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    for (const stage of stages) {
      const name = /^\S+ AS (\S+)/.exec(stage)?.[1];
      const body = stage.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n').replace(/\\\n/g, ' ');
      for (const m of body.matchAll(/apt-get install ([^;&\n]*)/g)) {
        const words = m[1]!.split(/\s+/).filter((w) => w && !w.startsWith('-'));
        for (const w of words) {
          if (w === '$pkgs') continue;
          // A literal name=version would be a second pin list.
          assert.ok(!w.includes('='), `stage ${name}: literal pin ${w}`);
          // Unpinned tools only where they carry bytes that a checksum then decides on.
          assert.equal(name, 'rust-analyzer', `stage ${name}: unpinned package ${w}`);
          assert.ok(['ca-certificates', 'curl'].includes(w), `stage ${name}: unexpected package ${w}`);
        }
      }
    }
  });

  it('installs npm packages only from package-lock.json, at the exact versions package.json pins', () => {
    assert.doesNotMatch(dockerfile.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n'), /\bnpm (install|i|add)\b|\bnpx\b|\byarn\b|\bpnpm\b/);
    assert.match(setup, /npm ci --ignore-scripts/);
    const pkg = JSON.parse(read('package.json')) as Record<string, Record<string, string> | undefined>;
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };
    for (const field of ['dependencies', 'optionalDependencies', 'devDependencies']) {
      for (const [name, range] of Object.entries(pkg[field] ?? {})) {
        assert.match(range, /^\d+\.\d+\.\d+(-[\w.]+)?$/, `${name}@${range} is not an exact pin`);
        assert.equal(lock.packages[`node_modules/${name}`]?.version, range, `${name}: package-lock has another version`);
      }
    }
  });

  it('pins rust-analyzer by release and sha256, verified before use', () => {
    const version = /^ARG RUST_ANALYZER_VERSION=(\S+)$/m.exec(dockerfile)?.[1];
    const sha = /^ARG RUST_ANALYZER_SHA256=(\S+)$/m.exec(dockerfile)?.[1];
    assert.match(version ?? '', /^\d{4}-\d{2}-\d{2}$/, 'a dated release, never "latest"');
    assert.match(sha ?? '', /^[0-9a-f]{64}$/);
    const stage = instructions().join('\n');
    assert.match(stage, /releases\/download\/\$\{RUST_ANALYZER_VERSION\}\/rust-analyzer-x86_64-unknown-linux-gnu\.gz/);
    assert.match(stage, /echo "\$\{RUST_ANALYZER_SHA256\}  \/tmp\/rust-analyzer\.gz" \| sha256sum -c -/);
    assert.doesNotMatch(dockerfile, /releases\/latest/);
  });

  it('ships the jail helper the set-up builds, and runs the daemon from source with tsx', () => {
    assert.match(dockerfile, /^COPY --from=builder \/opt\/lspd\/jail\/build\/ jail\/build\/$/m);
    assert.match(dockerfile, /^CMD \["node", "--import", "tsx", "src\/main\.ts"\]$/m);
    assert.match(dockerfile, /^EXPOSE 7420$/m);
  });
});
