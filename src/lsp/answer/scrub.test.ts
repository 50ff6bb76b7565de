import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createScrubber, scrub } from './scrub.js';

const opts = {
  treeHostDirs: ['/var/lib/lspd/roots/acme/api/abc/tree'],
  knownPaths: ['/var/lib/lspd', '/opt/lspd-install'],
};
const s = createScrubber(opts);

/** Each [input, what `scrubber` makes of it]; a failure names its input. */
function scrubs(cases: readonly (readonly [string, string])[], scrubber: (text: string) => string = s): void {
  for (const [input, want] of cases) assert.equal(scrubber(input), want, input);
}

/** Text the scrubber must leave as it is. */
function keeps(texts: readonly string[]): void {
  scrubs(texts.map((t) => [t, t]));
}

test('in-jail tree paths become root-relative; dependency paths become coordinates', () => {
  scrubs([
    ['defined in /src/lib/greet.ts:3:5.', 'defined in lib/greet.ts:3:5.'],
    ['module "/src/node_modules/dep/index"', 'module "node_modules/dep/index"'],
    ['at /deps/go/pkg/mod/github.com/!burnt!sushi/toml@v1.3.2/decode.go:10', 'at github.com/BurntSushi/toml@v1.3.2/decode.go:10'],
    ['see /deps/npm/top/node_modules/@types/node/fs.d.ts', 'see node_modules/@types/node/fs.d.ts'],
    ['cwd is /src', 'cwd is .'],
    ['escape /src/../etc/passwd', 'escape <path>'],
    ['/deps/python/x.py', '<path>'],
  ]);
});

test('host paths: system roots, homes, temp, proc', () => {
  scrubs([
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
  ]);
});

test('paths glued to command-line options (lspd quotes removed compile arguments)', () => {
  scrubs([
    ['removed: "-B/opt/cross/bin" "@/home/ci/args.rsp" "-fplugin=/srv/ci/evil.so"', 'removed: "-B<path>" "@<path>" "-fplugin=<path>"'],
    ['-I/usr/include -isystem/usr/lib/gcc/x86_64-linux-gnu/12/include', '-I<path> -isystem<path>'],
    ['--sysroot/home/alice/sdk and -I/src/include', '--sysroot<path> and -Iinclude'],
    ['clang @/var/lib/lspd/x.rsp', 'clang @<path>'],
  ]);
  // An option before something that is not a host path, and mid-word dashes, stay.
  keeps(['use -w/--warn', 'x-y/z', 'a -- /api/users route', 'email a@b.c', '-I/api/users']);
});

test('text that only looks like a path stays', () => {
  keeps([
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
  ]);
});

test('documentation URLs stay whole, path parts included; markdown link text stays', () => {
  keeps([
    'See https://docs.python.org/3/library/os.html#os.getcwd.',
    '[docs](https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/map)',
    'https://example.com/home/alice/tmp/x.py',
    '<https://go.dev/ref/mod#module-cache>',
    'https://en.wikipedia.org/wiki/Foo_(bar) and more',
    'mailto:someone@example.com',
  ]);
  scrubs([
    ['[greet](file:///src/lib/greet.ts#L3)', '[greet](lib/greet.ts#L3)'],
    ['[greet](file:///home/alice/greet.ts#L3)', '[greet](<path>)'],
    ['[x](file:///src/a.ts#/home/alice)', '[x](a.ts)'], // only line fragments survive
  ]);
});

test('file URIs', () => {
  scrubs([
    ['file:///src/a%20b.ts', 'a b.ts'],
    ['file:///etc/passwd', '<path>'],
    ['FILE:///etc/passwd', '<path>'],
    ['file://host/share/x', '<path>'],
    ['file:%2F%2F%2Fetc%2Fpasswd', '<path>'],
    ['file:///%65tc/passwd', '<path>'],
    ['file:///src/%2e%2e/etc/passwd', '<path>'],
    ['file:///src/a%252F..%252Fb', 'a%2F..%2Fb'],
    ['xfile:///etc/passwd', 'xfile://<path>'],
    ['_file:///etc/passwd', '_file:<path>'],
    ['vscode-remote:///home/alice/x', 'vscode-remote://<path>'],
    ['file:///deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go', 'example.com/dep@v1.0.0/greet.go'],
    ['(file:///tmp/x.py).', '(<path>).'],
  ]);
});

test('Windows, UNC and home-dir shorthands', () => {
  scrubs([
    ['at C:\\Users\\alice\\proj\\a.ts:3', 'at <path>'],
    ['at c:/Users/alice/a.ts', 'at <path>'],
    ['share \\\\fileserver\\share\\x.txt', 'share <path>'],
    ['see ~/.npmrc', 'see <path>'],
    ['see ~alice/notes.txt', 'see <path>'],
    ['owned by ~alice today', 'owned by <path> today'],
    ['"C:\\Program Files\\x\\y.exe"', '"<path>"'],
    ['{"file":"\\/home\\/alice\\/x.ts"}', '{"file":"<path>"}'],
    ['route \\/api\\/users', 'route \\/api\\/users'],
  ]);
});

test('quoted paths with spaces go whole', () => {
  scrubs([
    ['open "/home/my user/my file.txt" failed', 'open "<path>" failed'],
    ["open '/Users/a b/c'", "open '<path>'"],
    ['in `/src/my dir/a.ts`', 'in `my dir/a.ts`'],
    ['"file:///home/a b/x"', '"<path>"'],
    // unterminated quote: falls back to token scrubbing
    ['"/home/my user', '"<path> user'],
    // a quote whose content is not a path is left alone
    ['say "/api/v1 is fine"', 'say "/api/v1 is fine"'],
  ]);
});

test('known host paths are hidden anywhere, raw, encoded or in another case', () => {
  scrubs([
    ['x/var/lib/lspd/cache/y z', 'x<path> z'],
    ['https://evil.example/var/lib/lspd/secret?q=1 ok', 'https://evil.example<path> ok'],
    ['q=%2Fvar%2Flib%2Flspd%2Fx ok', 'q=<path> ok'],
    ['q=%2fvar%2flib%2flspd ok', 'q=<path> ok'],
    ['/VAR/LIB/LSPD/x', '<path>'],
    ['see file:///var/lib/lspd/a.ts, and FILE://localhost/var/lib/lspd', 'see <path>, and <path>'],
    ['/opt/lspd-install/node_modules/pyright/x.js', '<path>'],
    // the tree's host dir maps to root-relative even though the data dir contains it
    ['at /var/lib/lspd/roots/acme/api/abc/tree/src/a.ts:4', 'at src/a.ts:4'],
    ['file:///var/lib/lspd/roots/acme/api/abc/tree/src/a%20b.ts', 'src/a b.ts'],
  ]);
  // a longer name that merely starts with a known path is not it
  assert.equal(createScrubber({ knownPaths: ['/data/lspd'] })('/data/lspdx is a route'), '<path> is a route');
  // "/" and junk known paths are ignored rather than scrubbing everything
  assert.equal(createScrubber({ knownPaths: ['/', '', 'relative'] })('a / b'), 'a / b');
});

test('paths inside code fences are scrubbed too', () => {
  const hover = '```python\n(module) os\n/usr/lib/python3.12/os.py\n```\nSee https://docs.python.org/3/library/os.html';
  const ts = '```typescript\nimport("/src/lib/greet")\n```';
  scrubs([
    [hover, '```python\n(module) os\n<path>\n```\nSee https://docs.python.org/3/library/os.html'],
    [ts, '```typescript\nimport("lib/greet")\n```'],
  ]);
});

test('scrub without options, and odd input', () => {
  scrubs(
    [
      ['/home/x/y', '<path>'],
      ['', ''],
      [undefined as unknown as string, ''],
      ['plain text, nothing to do.', 'plain text, nothing to do.'],
      ['unicode ünïcödé /home/ü/x 😀', 'unicode ünïcödé <path> 😀'],
      ['/', '/'],
      ['~', '~'],
      ['\\\\', '\\\\'],
    ],
    scrub,
  );
});

test('adversarial 64 KiB inputs complete (linear scanning)', () => {
  const K = 64 * 1024;
  /** `unit` repeated to fill 64 KiB. */
  const fill = (unit: string) => unit.repeat(K / unit.length);
  const units = [
    '/',
    '"/',
    "'/home/a",
    '`~/',
    'file:',
    'file:///',
    'https://',
    'a:',
    '%2F',
    '%2Fhome',
    '\\\\',
    '\\/',
    '\\/home',
    '~a',
    'C:\\',
    '[x](file:///src/a#L1',
    '/var/lib/lspd',
    '%2fvar%2flib%2flspd',
    '"/home/x' + ' '.repeat(100),
    '-I/',
    '@/home/a ',
    ' -',
    ' --' + 'a'.repeat(60) + '/',
  ];
  const inputs = [
    ...units.map(fill),
    fill(':') + 'x',
    '/home' + fill(':') + 'x',
    'https://x/' + fill('('),
    '/src/' + fill('a/'),
    '/home/a.b' + fill('.'),
    '"' + fill('/home/a b '),
    Array.from({ length: K / 8 }, (_, i) => (i % 2 ? '"/tmp/a"' : "'/x/y.z")).join(''),
  ];
  for (const input of inputs) {
    const out = s(input);
    assert.equal(typeof out, 'string');
    assert.ok(!/\/home\/[a-z]/.test(out), input.slice(0, 30));
  }
});

test('text that cannot hold a path is returned as is, and one character more is scanned again', () => {
  const s = createScrubber({ treeHostDirs: ['/var/lib/lspd/roots/o/r/abc/tree'], knownPaths: ['/var/lib/lspd'] });
  for (const plain of ['greet', 'Person.name', 'Map<string, number[]>', 'f(a, b) { x = y | z & w; }', 'a+b*c!?']) assert.equal(s(plain), plain);
  assert.equal(s('see /var/lib/lspd/roots/o/r/abc/tree/src/a.ts'), 'see src/a.ts');
  assert.equal(s('"/etc/passwd"'), '"<path>"');
  assert.equal(s('C:/Users/x'), '<path>');
});
