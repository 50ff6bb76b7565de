// The egress proxy's request parsing is pure: what a FETCH jail may ask for, and how
// a destination is put in the one canonical form the allowlist is matched against.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalAuthority, parseProxyHead, splitAuthority } from './egress-proxy.js';

test('canonical authorities: case, trailing dot, IPv6 brackets, ports', () => {
  assert.equal(canonicalAuthority('Registry.NPMjs.org', '443'), 'registry.npmjs.org:443');
  assert.equal(canonicalAuthority('registry.npmjs.org.', 443), 'registry.npmjs.org:443');
  assert.equal(canonicalAuthority('[::1]', '80'), '[::1]:80');
  assert.equal(canonicalAuthority('::1', '80'), '[::1]:80');
  for (const [h, p] of [
    ['a.org', '0'],
    ['a.org', '65536'],
    ['a.org', '44x'],
    ['a.org', '-1'],
    ['', '443'],
    ['a b', '443'],
    ['user@a.org', '443'],
    ['a.org/x', '443'],
    ['a:b', '443'],
  ]) {
    assert.equal(canonicalAuthority(h!, p!), undefined, `${h}:${p}`);
  }
  assert.deepEqual(splitAuthority('[2001:db8::1]:443'), { host: '[2001:db8::1]', port: '443' });
  assert.equal(splitAuthority('a.org'), undefined);
});

test('CONNECT names its destination', () => {
  assert.deepEqual(parseProxyHead('CONNECT Registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443'), {
    method: 'CONNECT',
    authority: 'registry.npmjs.org:443',
    connect: true,
  });
  assert.equal(typeof parseProxyHead('CONNECT registry.npmjs.org HTTP/1.1'), 'string', 'CONNECT needs a port');
  assert.equal(typeof parseProxyHead('CONNECT http://a.org:443/ HTTP/1.1'), 'string');
});

test('plain HTTP is forwarded in origin form, proxy headers dropped, one request per connection', () => {
  const r = parseProxyHead(
    'GET http://proxy.golang.org/x/@v/list?q=1 HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: secret\r\nProxy-Connection: keep-alive\r\nAccept: */*',
  );
  assert.ok(typeof r !== 'string');
  assert.equal(r.authority, 'proxy.golang.org:80', 'the destination is the target URL, never the Host header');
  assert.equal(r.upstreamHead, 'GET /x/@v/list?q=1 HTTP/1.1\r\nHost: evil.example\r\nAccept: */*\r\nConnection: close\r\n\r\n');
});

test('everything else is refused with a reason', () => {
  for (const head of [
    'GET /relative HTTP/1.1',
    'GET https://a.org/ HTTP/1.1',
    'GET http://user:pw@a.org/ HTTP/1.1',
    'GET ftp://a.org/ HTTP/1.1',
    'get http://a.org/ HTTP/1.1',
    'GET http://a.org/ HTTP/2.0',
    'GET  http://a.org/ HTTP/1.1',
    '',
  ]) {
    assert.equal(typeof parseProxyHead(head), 'string', JSON.stringify(head));
  }
});
