// Start-up refuses a data dir or tokens file any jail could see (issue 13): the
// daemon exits 2 before listening, saying which setting and which bind, and
// creates nothing there. Real daemons; they stop before the jail is built.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir, spawnDaemon, tempDir } from './helpers/daemon.js';

describe('start-up refuses private paths a jail can see', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('LSPD_DATA under the project node_modules (bound into every SERVE jail)', async () => {
    const data = join(projectDir, 'node_modules', `.lspd-tenancy-data-${process.pid}`);
    dirs.push(data);
    await assert.rejects(
      spawnDaemon({ dataDir: data }),
      /exited 2 before listening: lspd: bad configuration: LSPD_DATA \(.*\) lies under .*node_modules, which the SERVE jail binds at \/opt\/lspd\/node_modules/,
    );
    assert.ok(!existsSync(data), 'nothing was created there');
  });

  it('LSPD_TOKENS reached through a symlink into /usr', async () => {
    const dir = tempDir('lspd-tenancy-');
    dirs.push(dir);
    symlinkSync('/usr/share', join(dir, 'secrets'));
    await assert.rejects(
      spawnDaemon({ dataDir: join(dir, 'data'), env: { LSPD_TOKENS: join(dir, 'secrets', 'tokens.json') } }),
      /exited 2 before listening: lspd: bad configuration: LSPD_TOKENS \(.*secrets\/tokens\.json\) lies under \/usr, which the SERVE and FETCH jails bind at \/usr/,
    );
  });
});
