// Under CI a missing prerequisite fails the run instead of skipping it: a jail test
// file run with CI=true and a bubblewrap that does not exist exits non-zero and
// names what is missing (issue 17: "CI can pass without testing the jail"). The same
// holds for a suite-level skip on a server or tool (issue 31: the clangd plugin test
// once skipped its whole describe under CI, reporting 0 tests and passing), and every
// skip in the suite goes through test/helpers/host.ts, which is what makes this so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { projectDir } from './helpers/daemon.js';

/** The environment of a test run of its own (the runner marks its children with NODE_TEST_CONTEXT). */
function runEnv(extra: Record<string, string>, ci: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  if (!ci) {
    delete env.CI;
    delete env.LSPD_REQUIRE_JAIL;
  }
  return env;
}

function runFile(file: string, extra: Record<string, string>, ci: boolean) {
  const env = runEnv(ci ? { CI: 'true', ...extra } : extra, ci);
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', file], { cwd: projectDir, env, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, out: r.stdout + r.stderr, stdout: r.stdout };
}

test('CI=true: a jail test file on a host without bubblewrap fails, naming it', () => {
  const r = runFile('test/jail-binds.test.ts', { LSPD_BWRAP_PATH: '/nonexistent/bwrap' }, true);
  assert.notEqual(r.status, 0, r.out);
  assert.match(r.out, /MissingPrerequisite: .*bubblewrap is not installed/);
  assert.match(r.out, /# skipped 0/);
});

test('without CI the same file skips, saying why', () => {
  const r = runFile('test/jail-binds.test.ts', { LSPD_BWRAP_PATH: '/nonexistent/bwrap' }, false);
  assert.equal(r.status, 0, r.out);
  assert.match(r.stdout, /# SKIP this host cannot run jails: bubblewrap is not installed/);
});

// The clangd plugin file's describe needs clangd and cc. With no cc on PATH, under CI
// the file fails naming it; the suite-level skip does not turn into "0 tests, pass".
test('CI=true: a suite-level skip on a missing tool (the clangd plugin file without cc) fails the file', () => {
  const r = runFile('test/lang-c-flags.test.ts', { PATH: '/nonexistent' }, true);
  assert.notEqual(r.status, 0, r.out);
  assert.match(r.out, /MissingPrerequisite: .*no C compiler \(cc\)/);
  assert.match(r.out, /# skipped 0/);
});

test('without CI the same suite skips, saying why', () => {
  const r = runFile('test/lang-c-flags.test.ts', { PATH: '/nonexistent' }, false);
  assert.equal(r.status, 0, r.out);
  assert.match(r.stdout, /# SKIP no C compiler \(cc\)/);
});

function* testSources(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'fixtures' || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* testSources(p);
    else if (/\.ts$/.test(e.name)) yield p;
  }
}

// A skip whose reason is written in place never reaches skipOrFail, so it would skip
// under CI too. Every reason must come from host.ts (cannotJail, lacksBinaries,
// skipOrFail, or a helper built on them); `.skip`/`.todo` variants are never allowed.
test('every skip in the suite goes through test/helpers/host.ts', () => {
  const bad: string[] = [];
  const rules: [RegExp, string][] = [
    [/\bt\.skip\(\s*['"`]/, 't.skip with a literal reason'],
    [/\bskip\s*[:=]\s*['"`]/, 'a skip option or variable set to a literal'],
    [/^(?!.*skipOrFail\().*\?\s*undefined\s*:\s*['"`]/, 'a skip reason chosen in place, not through skipOrFail'],
    [/\b(?:describe|it|test)\.(?:skip|todo)\(/, 'a .skip/.todo variant'],
    [/\{\s*todo\s*[:}]/, 'a todo option'],
  ];
  for (const file of [...testSources(join(projectDir, 'test')), ...testSources(join(projectDir, 'src'))]) {
    if (file.endsWith(join('helpers', 'host.ts')) || file.endsWith('ops-ci-noskip.test.ts')) continue;
    if (file.startsWith(join(projectDir, 'src')) && !/\.test\.ts$/.test(file)) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const [re, what] of rules) if (re.test(line)) bad.push(`${relative(projectDir, file)}:${i + 1}: ${what}: ${line.trim()}`);
      });
  }
  assert.deepEqual(bad, [], 'route each through skipOrFail/cannotJail/lacksBinaries in test/helpers/host.ts');
});
