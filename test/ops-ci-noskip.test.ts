// Under CI a missing prerequisite fails the run instead of skipping it: a jail test
// file run with CI=true and a bubblewrap that does not exist exits non-zero and
// names what is missing (issue 17: "CI can pass without testing the jail").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { projectDir } from './helpers/daemon.js';

/** The environment of a test run of its own (the runner marks its children with NODE_TEST_CONTEXT). */
function runEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

test('CI=true: a jail test file on a host without bubblewrap fails, naming it', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', 'test/jail-binds.test.ts'], {
    cwd: projectDir,
    env: runEnv({ CI: 'true', LSPD_BWRAP_PATH: '/nonexistent/bwrap' }),
    encoding: 'utf8',
    timeout: 120_000,
  });
  const out = r.stdout + r.stderr;
  assert.notEqual(r.status, 0, out);
  assert.match(out, /MissingPrerequisite: .*bubblewrap is not installed/);
  assert.match(out, /# skipped 0/);
});

test('without CI the same file skips, saying why', () => {
  const env = runEnv({ LSPD_BWRAP_PATH: '/nonexistent/bwrap' });
  delete env.CI;
  delete env.LSPD_REQUIRE_JAIL;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', 'test/jail-binds.test.ts'], { cwd: projectDir, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /# SKIP this host cannot run jails: bubblewrap is not installed/);
});
