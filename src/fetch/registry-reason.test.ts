import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registryFailure } from './registry-reason.js';

describe('registry failures', () => {
  it('tells apart a host not allowed, one that did not answer, one unreachable, a missing package and a bad hash', () => {
    const cases: [string, ReturnType<typeof registryFailure>][] = [
      ['npm error code E403\nnpm error 403 403 Forbidden - GET http://127.0.0.1:9/left-pad-lite/-/left-pad-lite-1.0.0.tgz', 'not_allowed'],
      ['Tunnel connection failed: 403 Forbidden', 'not_allowed'],
      // pip through CONNECT to an allowed host that refused: once read as "not allowed".
      ["ProxyError('Unable to connect to proxy', OSError('Tunnel connection failed: 502 Bad Gateway'))", 'unreachable'],
      ['npm error 502 Bad Gateway - GET http://127.0.0.1:9/x', 'unreachable'],
      ['npm error code ECONNREFUSED', 'unreachable'],
      ['npm error 504 Gateway Timeout - GET https://registry.npmjs.org/x', 'timed_out'],
      ['npm error code E404\nnpm error 404 Not Found - GET http://127.0.0.1:9/nope', 'not_found'],
      ['npm error code EINTEGRITY', 'integrity'],
      ['verifying example.com/dep@v1.0.0: checksum mismatch', 'integrity'],
      ['added 12 packages in 3s', undefined],
    ];
    for (const [out, want] of cases) assert.equal(registryFailure(out), want, out);
  });
});
