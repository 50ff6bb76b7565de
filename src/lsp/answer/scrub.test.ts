import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createScrubber, scrub } from './scrub.js';

const opts = {
  treeHostDirs: ['/var/lib/lspd/roots/acme/api/abc/tree'],
  knownPaths: ['/var/lib/lspd', '/opt/lspd-install'],
};
const s = createScrubber(opts);

test('in-jail tree paths become root-relative; dependency paths become coordinates', () => {
  assert.equal(s('defined in /src/lib/greet.ts:3:5.'), 'defined in lib/greet.ts:3:5.');
  assert.equal(s('module "/src/node_modules/dep/index"'), 'module "node_modules/dep/index"');
  assert.equal(s('at /deps/go/pkg/mod/github.com/!burnt!sushi/toml@v1.3.2/decode.go:10'), 'at github.com/BurntSushi/toml@v1.3.2/decode.go:10');
  assert.equal(s('see /deps/npm/top/node_modules/@types/node/fs.d.ts'), 'see node_modules/@types/node/fs.d.ts');
  assert.equal(s('cwd is /src'), 'cwd is .');
  assert.equal(s('escape /src/../etc/passwd'), 'escape <path>');
  assert.equal(s('/deps/python/x.py'), '<path>');
});

test('host paths: system roots, homes, temp, proc', () => {
  for (const [input, want] of [
    ['open /home/alice/.ssh/id_rsa failed', 'open <path> failed'],
    ['/root/.bashrc', '<path>'],
    ['tmp file /tmp/lspd-123/x.json,', 'tmp file <path>,'],
    ['(/Users/bob/Library/Caches/x)', '(<path>)'],
    ['read /proc/self/environ', 'read <path>'],
    ['typeshed: /opt/pyright/dist/typeshed-fallback/stdlib/builtins.pyi:12:1', 'typeshed: <path>:12:1'],
    ['PATH=/usr/bin:/home/x/bin', 'PATH=<path>'],
    ['Error:/etc/passwd', 'Error:<path>'],
    ['**/home/alice/x**', '**<path>**'],
    ['`/usr/lib/python3.12/os.py`', '`<path>`'],
    ['//home/alice/x', '<path>'],
    ['a file /weird/place/x.py here', 'a file <path> here'],
  ] as const) {
    assert.equal(s(input), want, input);
  }
});

test('text that only looks like a path stays', () => {
  for (const keep of [
    'GET /api/users returns a list',
    'a / b and a/b',
    '// comment',
    'x = y /2',
    'relative src/app.ts and ./home/x',
    'const re = /^[a-z]+$/',
    'and/or',
    '</div>',
    '~~deprecated~~',
    'const y = ~x;',
    '2024/01/02',
    'route "/api/users"',
    'ratio 1/2',
  ]) {
    assert.equal(s(keep), keep);
  }
});

test('documentation URLs stay whole, path parts included; markdown link text stays', () => {
  for (const keep of [
    'See https://docs.python.org/3/library/os.html#os.getcwd.',
    '[docs](https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/map)',
    'https://example.com/home/alice/tmp/x.py',
    '<https://go.dev/ref/mod#module-cache>',
    'https://en.wikipedia.org/wiki/Foo_(bar) and more',
    'mailto:someone@example.com',
  ]) {
    assert.equal(s(keep), keep);
  }
  assert.equal(s('[greet](file:///src/lib/greet.ts#L3)'), '[greet](lib/greet.ts#L3)');
  assert.equal(s('[greet](file:///home/alice/greet.ts#L3)'), '[greet](<path>)');
  assert.equal(s('[x](file:///src/a.ts#/home/alice)'), '[x](a.ts)'); // only line fragments survive
});

test('file URIs', () => {
  assert.equal(s('file:///src/a%20b.ts'), 'a b.ts');
  assert.equal(s('file:///etc/passwd'), '<path>');
  assert.equal(s('FILE:///etc/passwd'), '<path>');
  assert.equal(s('file://host/share/x'), '<path>');
  assert.equal(s('file:%2F%2F%2Fetc%2Fpasswd'), '<path>');
  assert.equal(s('file:///%65tc/passwd'), '<path>');
  assert.equal(s('file:///src/%2e%2e/etc/passwd'), '<path>');
  assert.equal(s('file:///src/a%252F..%252Fb'), 'a%2F..%2Fb');
  assert.equal(s('xfile:///etc/passwd'), 'xfile://<path>');
  assert.equal(s('_file:///etc/passwd'), '_file:<path>');
  assert.equal(s('vscode-remote:///home/alice/x'), 'vscode-remote://<path>');
  assert.equal(s('file:///deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go'), 'example.com/dep@v1.0.0/greet.go');
  assert.equal(s('(file:///tmp/x.py).'), '(<path>).');
});

test('Windows, UNC and home-dir shorthands', () => {
  assert.equal(s('at C:\\Users\\alice\\proj\\a.ts:3'), 'at <path>');
  assert.equal(s('at c:/Users/alice/a.ts'), 'at <path>');
  assert.equal(s('share \\\\fileserver\\share\\x.txt'), 'share <path>');
  assert.equal(s('see ~/.npmrc'), 'see <path>');
  assert.equal(s('see ~alice/notes.txt'), 'see <path>');
  assert.equal(s('owned by ~alice today'), 'owned by <path> today');
  assert.equal(s('"C:\\Program Files\\x\\y.exe"'), '"<path>"');
  assert.equal(s('{"file":"\\/home\\/alice\\/x.ts"}'), '{"file":"<path>"}');
  assert.equal(s('route \\/api\\/users'), 'route \\/api\\/users');
});

test('quoted paths with spaces go whole', () => {
  assert.equal(s('open "/home/my user/my file.txt" failed'), 'open "<path>" failed');
  assert.equal(s("open '/Users/a b/c'"), "open '<path>'");
  assert.equal(s('in `/src/my dir/a.ts`'), 'in `my dir/a.ts`');
  assert.equal(s('"file:///home/a b/x"'), '"<path>"');
  // unterminated quote: falls back to token scrubbing
  assert.equal(s('"/home/my user'), '"<path> user');
  // a quote whose content is not a path is left alone
  assert.equal(s('say "/api/v1 is fine"'), 'say "/api/v1 is fine"');
});

test('known host paths are hidden anywhere, raw, encoded or in another case', () => {
  assert.equal(s('x/var/lib/lspd/cache/y z'), 'x<path> z');
  assert.equal(s('https://evil.example/var/lib/lspd/secret?q=1 ok'), 'https://evil.example<path> ok');
  assert.equal(s('q=%2Fvar%2Flib%2Flspd%2Fx ok'), 'q=<path> ok');
  assert.equal(s('q=%2fvar%2flib%2flspd ok'), 'q=<path> ok');
  assert.equal(s('/VAR/LIB/LSPD/x'), '<path>');
  assert.equal(s('see file:///var/lib/lspd/a.ts, and FILE://localhost/var/lib/lspd'), 'see <path>, and <path>');
  assert.equal(s('/opt/lspd-install/node_modules/pyright/x.js'), '<path>');
  // a longer name that merely starts with a known path is not it
  assert.equal(createScrubber({ knownPaths: ['/data/lspd'] })('/data/lspdx is a route'), '<path> is a route');
  // the tree's host dir maps to root-relative even though the data dir contains it
  assert.equal(s('at /var/lib/lspd/roots/acme/api/abc/tree/src/a.ts:4'), 'at src/a.ts:4');
  assert.equal(s('file:///var/lib/lspd/roots/acme/api/abc/tree/src/a%20b.ts'), 'src/a b.ts');
  // "/" and junk known paths are ignored rather than scrubbing everything
  assert.equal(createScrubber({ knownPaths: ['/', '', 'relative'] })('a / b'), 'a / b');
});

test('paths inside code fences are scrubbed too', () => {
  const hover = '```python\n(module) os\n/usr/lib/python3.12/os.py\n```\nSee https://docs.python.org/3/library/os.html';
  assert.equal(s(hover), '```python\n(module) os\n<path>\n```\nSee https://docs.python.org/3/library/os.html');
  const ts = '```typescript\nimport("/src/lib/greet")\n```';
  assert.equal(s(ts), '```typescript\nimport("lib/greet")\n```');
});

test('scrub without options, and odd input', () => {
  assert.equal(scrub('/home/x/y'), '<path>');
  assert.equal(scrub(''), '');
  assert.equal(scrub(undefined as unknown as string), '');
  assert.equal(scrub('plain text, nothing to do.'), 'plain text, nothing to do.');
  assert.equal(scrub('unicode ünïcödé /home/ü/x 😀'), 'unicode ünïcödé <path> 😀');
  assert.equal(scrub('/'), '/');
  assert.equal(scrub('~'), '~');
  assert.equal(scrub('\\\\'), '\\\\');
});

test('adversarial 64 KiB inputs complete (linear scanning)', () => {
  const K = 64 * 1024;
  const inputs = [
    '/'.repeat(K),
    ':'.repeat(K) + 'x',
    '/home' + ':'.repeat(K) + 'x',
    '"/'.repeat(K / 2),
    "'/home/a".repeat(K / 8),
    '`~/'.repeat(K / 3),
    'file:'.repeat(K / 5),
    'file:///'.repeat(K / 8),
    'https://'.repeat(K / 8),
    'https://x/' + '('.repeat(K),
    'a:'.repeat(K / 2),
    '%2F'.repeat(K / 3),
    '%2Fhome'.repeat(K / 7),
    '\\\\'.repeat(K / 2),
    '\\/'.repeat(K / 2),
    '\\/home'.repeat(K / 6),
    '~a'.repeat(K / 2),
    '[x](file:///src/a#L1'.repeat(K / 20),
    'C:\\'.repeat(K / 3),
    '/var/lib/lspd'.repeat(K / 13),
    '%2fvar%2flib%2flspd'.repeat(K / 19),
    '/src/' + 'a/'.repeat(K / 2),
    '/home/a.b' + '.'.repeat(K),
    '"' + '/home/a b '.repeat(K / 10),
    ('"/home/x' + ' '.repeat(100)).repeat(K / 108),
    Array.from({ length: K / 8 }, (_, i) => (i % 2 ? '"/tmp/a"' : "'/x/y.z")).join(''),
  ];
  for (const input of inputs) {
    const out = s(input);
    assert.equal(typeof out, 'string');
    assert.ok(!/\/home\/[a-z]/.test(out), input.slice(0, 30));
  }
});
