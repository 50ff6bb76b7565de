import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, posix } from 'node:path';
import { fileUriToJailPath, hostPathOf, isUnder, jailPathToFileUri, normalizeJailPath, npmModulesAt, treeFileUri, treeJailPath } from './paths.js';

test('tree URIs escape like vscode-uri and round-trip', () => {
  assert.equal(treeFileUri('src/app.ts'), 'file:///src/src/app.ts');
  assert.equal(treeFileUri('a b/c#d?(e).ts'), 'file:///src/a%20b/c%23d%3F%28e%29.ts');
  assert.equal(treeFileUri('ü/中.py'), 'file:///src/%C3%BC/%E4%B8%AD.py');
  for (const rel of ['src/app.ts', 'a b/c#d?(e).ts', 'ü/中.py', "it's!/*.ts", '%41.ts']) {
    assert.equal(fileUriToJailPath(treeFileUri(rel)), treeJailPath(rel));
  }
  assert.equal(jailPathToFileUri('/deps/go/pkg/mod/x@v1/a.go'), 'file:///deps/go/pkg/mod/x%40v1/a.go');
});

test('file URIs: authority, query, fragment, case', () => {
  assert.equal(fileUriToJailPath('file:///src/a.ts'), '/src/a.ts');
  assert.equal(fileUriToJailPath('file://localhost/src/a.ts'), '/src/a.ts');
  assert.equal(fileUriToJailPath('FILE:///src/a.ts'), '/src/a.ts');
  assert.equal(fileUriToJailPath('file:/src/a.ts'), '/src/a.ts');
  assert.equal(fileUriToJailPath('file:///src/a.ts#L3'), '/src/a.ts');
  assert.equal(fileUriToJailPath('file:///src/a.ts?x=1'), '/src/a.ts');
  assert.equal(fileUriToJailPath('file://evil.example/src/a.ts'), undefined);
  assert.equal(fileUriToJailPath('file://server/share/x'), undefined);
  assert.equal(fileUriToJailPath('/src//./a.ts'), '/src/a.ts');
});

test('hostile URIs are refused', () => {
  for (const bad of [
    'file:///src/../etc/passwd',
    'file:///src/%2E%2E/etc/passwd',
    'file:///src/a%2F..%2F..%2Fetc%2Fpasswd',
    'file:///src/a%00.ts',
    'file:///src/a%0A.ts',
    'file:///src/%E0%A4%A', // truncated escape
    'file:///src/%FF.ts', // not UTF-8
    'untitled:Untitled-1',
    'https://example.com/src/a.ts',
    'jdt://contents/x.class',
    'src/a.ts',
    '',
    'file:',
    'file://',
    'file:relative/path',
    'file:///src/' + 'a/'.repeat(5000),
    42 as unknown as string,
  ]) {
    assert.equal(fileUriToJailPath(bad), undefined, String(bad).slice(0, 60));
  }
});

test('percent-decoding happens exactly once', () => {
  assert.equal(fileUriToJailPath('file:///src/a%252F..%252Fb.ts'), '/src/a%2F..%2Fb.ts');
  assert.equal(fileUriToJailPath('file:///src/%252E%252E/x'), '/src/%2E%2E/x');
});

test('normalizeJailPath', () => {
  assert.equal(normalizeJailPath('/'), '/');
  assert.equal(normalizeJailPath('/a/./b//c/'), '/a/b/c');
  assert.equal(normalizeJailPath('/a/..'), undefined);
  assert.equal(normalizeJailPath('/a/...'), '/a/...');
  assert.equal(normalizeJailPath('a/b'), undefined);
  assert.equal(normalizeJailPath('/a\u007fb'), undefined);
});

test('isUnder is segment-aware', () => {
  assert.ok(isUnder('/src', '/src'));
  assert.ok(isUnder('/src/a', '/src'));
  assert.ok(!isUnder('/srcx/a', '/src'));
  assert.ok(isUnder('/src/a', '/src/'));
});

test('hostPathOf maps only the tree and the deps, and never escapes them', () => {
  const dirs = { treeHostDir: '/data/roots/x/tree', depsHostDir: '/data/roots/x/deps' };
  assert.equal(hostPathOf('/src/a/b.ts', dirs), '/data/roots/x/tree/a/b.ts');
  assert.equal(hostPathOf('/src', dirs), '/data/roots/x/tree');
  assert.equal(hostPathOf('/deps/go/pkg/mod/x@v1/a.go', dirs), '/data/roots/x/deps/go/pkg/mod/x@v1/a.go');
  assert.equal(hostPathOf('/src/../etc/passwd', dirs), undefined);
  assert.equal(hostPathOf('/etc/passwd', dirs), undefined);
  assert.equal(hostPathOf('/srcx/a', dirs), undefined);
  assert.equal(hostPathOf('/deps/a', { treeHostDir: '/t' }), undefined);
});

test('npm install locations', () => {
  assert.equal(npmModulesAt(''), '/deps/npm/top/node_modules');
  assert.equal(npmModulesAt('.'), '/deps/npm/top/node_modules');
  assert.equal(npmModulesAt('packages/web'), '/deps/npm/ws/packages/web/node_modules');
  assert.equal(treeJailPath('.'), '/src');
});

test('the fast paths answer as the general ones do', () => {
  // Another way to the same answer: posix.normalize, less its trailing slash, on what is neither refused nor too long.
  const slowNormalize = (p: string) =>
    // eslint-disable-next-line no-control-regex
    p.length === 0 || p.length > 4096 || p[0] !== '/' || /[\u0000-\u001f\u007f]/.test(p) || p.split('/').includes('..')
      ? undefined
      : posix.normalize(p).replace(/(.)\/$/, '$1');
  const parts = ['', '.', '..', '...', 'a', '.a', 'a.', '..a', 'ü', 'a b', '\u0001', '\u007f', '%41', '@', '!'];
  const seen = new Set<string>();
  for (const a of parts) for (const b of parts) for (const c of parts) for (const tail of ['', '/']) seen.add(`/${a}/${b}/${c}${tail}`);
  for (const p of [...seen, '/', '//', 'a/b', '', '/' + 'a'.repeat(4096), '/' + 'a'.repeat(4095)]) {
    assert.equal(normalizeJailPath(p), slowNormalize(p), JSON.stringify(p));
    const n = slowNormalize(p);
    if (n !== undefined) {
      assert.equal(
        jailPathToFileUri(n),
        'file://' +
          n
            .split('/')
            .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (x) => '%' + x.charCodeAt(0).toString(16).toUpperCase()))
            .join('/'),
      );
      assert.equal(fileUriToJailPath(jailPathToFileUri(n)), n);
    }
  }
  // A host dir that is not normal is joined, not concatenated.
  for (const treeHostDir of ['/data/roots/t', '/data/roots/t/', '/data//roots/./t', '/']) {
    assert.equal(hostPathOf('/src/a/b.ts', { treeHostDir }), join(treeHostDir, '/a/b.ts'));
    assert.equal(hostPathOf('/src', { treeHostDir }), join(treeHostDir, ''));
  }
  assert.equal(hostPathOf('/src/m/x.ts', { treeHostDir: '/t', mounts: [{ host: '/d/nm/', at: '/src/m' }] }), '/d/nm/x.ts');
});
