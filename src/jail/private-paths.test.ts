import assert from 'node:assert/strict';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { JAIL_BUILD_DIR, PROJECT_DIR } from './policy.js';
import { jailVisiblePath } from './private-paths.js';

const dataDir = mkdtempSync(join(tmpdir(), 'lspd-private-'));

test('paths outside what the jails bind pass', () => {
  assert.equal(
    jailVisiblePath(dataDir, [
      { name: 'LSPD_DATA', path: dataDir },
      { name: 'LSPD_TOKENS', path: join(dataDir, 'tokens.json') },
    ]),
    undefined,
  );
  // The project itself is not bound, only its node_modules and jail/build: ./data is fine.
  assert.equal(jailVisiblePath(join(PROJECT_DIR, 'data'), [{ name: 'LSPD_DATA', path: join(PROJECT_DIR, 'data') }]), undefined);
});

test('a path under any bind of either phase is refused, naming it, the bind and the phase', () => {
  const nm = jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: join(PROJECT_DIR, 'node_modules', 'lspd-data') }]);
  assert.match(nm ?? '', /^LSPD_DATA \(.*node_modules\/lspd-data\) lies under .*node_modules, which the SERVE jail binds at \/opt\/lspd\/node_modules/);
  const tools = jailVisiblePath(dataDir, [{ name: 'LSPD_CONFIG', path: join(JAIL_BUILD_DIR, 'lspd.json') }]);
  assert.match(tools ?? '', /^LSPD_CONFIG .* which the SERVE and FETCH jails bind at \/opt\/lspd\/jail/);
  assert.match(
    jailVisiblePath(dataDir, [{ name: 'LSPD_TOKENS', path: '/etc/ssl/private/lspd-tokens.json' }]) ?? '',
    /which the FETCH jail binds at \/etc\/ssl/,
  );
  assert.match(jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: '/usr/local/lib/lspd' }]) ?? '', /lies under \/usr,/);
  // The bound path itself, not only what is below it.
  assert.match(jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: '/usr' }]) ?? '', /lies under \/usr,/);
  assert.equal(jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: '/usrdata' }]), undefined, 'a sibling with a common prefix is not under it');
});

test('real paths are compared: a symlink into a bound directory counts as in it', () => {
  const link = join(dataDir, 'looks-private');
  symlinkSync('/usr/share', link);
  assert.match(jailVisiblePath(dataDir, [{ name: 'LSPD_TOKENS', path: join(link, 'tokens.json') }]) ?? '', /^LSPD_TOKENS .* lies under \/usr,/);
});

test("the Debian 13 root's /usr is bound too: a data dir there is refused", () => {
  const dataDir = '/var/lib/lspd-test';
  const root = '/opt/lspd/debian13';
  assert.match(
    jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: `${root}/usr/share/lspd` }], [root]) ?? '',
    /lies under \/opt\/lspd\/debian13\/usr, which the SERVE and FETCH jails bind at \/usr/,
  );
  // The rest of the root is not bound.
  assert.equal(jailVisiblePath(dataDir, [{ name: 'LSPD_DATA', path: `${root}-data` }], [root]), undefined);
});
