// README's configuration table is generated (`lspd config --markdown`, from the
// config schema) and must be current; its operator sections are all there.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configSchema, envName } from '../src/config.js';
import { createMetrics } from '../src/metrics.js';
import { projectDir } from './helpers/daemon.js';
import { runCli } from './helpers/ops.js';

const readme = readFileSync(join(projectDir, 'README.md'), 'utf8');

describe('README', () => {
  it('embeds the current configuration table between the config-table markers', async () => {
    const m = /<!-- config-table -->\n([\s\S]*?)\n<!-- \/config-table -->/.exec(readme);
    assert.ok(m, 'README has <!-- config-table --> … <!-- /config-table -->');
    const r = await runCli(['config', '--markdown']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(m[1], r.stdout.trimEnd(), 'README table is stale: replace it with the output of `lspd config --markdown`');
    for (const key of Object.keys(configSchema.shape)) assert.ok(m[1]!.includes(`\`${envName(key)}\``), `${envName(key)} missing`);
  });

  it('documents every lspd metric', async () => {
    for (const m of await createMetrics().registry.getMetricsAsJSON()) {
      if (m.name.startsWith('lspd_')) assert.ok(readme.includes(`| \`${m.name}\` |`), `${m.name} is not in README's metrics table`);
    }
  });

  it('has the operator sections', () => {
    for (const h of [
      '## Run it',
      '### Other hosts',
      '## Configuration',
      '## Auth',
      '## The command line',
      '## Deploy',
      '### Kubernetes',
      '## Scale-out',
      '## Metrics',
      '## Security model',
      '## Failure behaviour',
    ]) {
      assert.ok(readme.includes(`\n${h}`), `README lacks "${h}"`);
    }
  });
});
