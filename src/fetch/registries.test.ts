// The default egress allowlist and the fetch ecosystems agree both ways: every host
// an ecosystem's default registry settings reach is allowed, and nothing else is (a
// host allowed for an ecosystem lspd does not fetch is a way out for nothing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configSchema } from '../config.js';
import { ecosystemTable } from './ecosystems/table.js';

test('the default LSPD_FETCH_REGISTRIES is the union of the ecosystems’ default hosts', () => {
  const defaults = configSchema.parse({});
  const hosts = ecosystemTable.flatMap((r) => r.defaultHosts);
  assert.equal(new Set(hosts).size, hosts.length, 'no host is listed by two ecosystems');
  assert.deepEqual([...defaults.fetchRegistries].sort(), [...hosts].sort());
});

test('each ecosystem’s default registry URL is on one of its own default hosts', () => {
  const c = configSchema.parse({});
  const urls: Record<string, string> = {
    go: c.goProxy,
    npm: c.npmRegistry,
    python: c.pipIndexUrl,
    composer: c.composerRepo,
    cargo: c.cargoRegistry.replace(/^sparse\+/, ''),
  };
  for (const r of ecosystemTable) {
    const u = new URL(urls[r.name]!);
    assert.ok(r.defaultHosts.includes(`${u.hostname}:${u.port || 443}`), `${r.name}: ${u.host} in ${r.defaultHosts.join(', ')}`);
  }
});
