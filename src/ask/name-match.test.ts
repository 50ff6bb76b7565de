// Unit tests of the pure name rules: parsing, container chains, tiers, overloads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainOf, leafOf, matchQualifiers, moduleChain, parseSymbolName, rank, select, type SymbolLike } from './name-match.js';
import { AppError } from '../errors.js';

test('parseSymbolName: plain, dotted, ::, #, ->, import paths, trailing ()', () => {
  assert.deepEqual(parseSymbolName('Greet'), { raw: 'Greet', leaf: 'Greet', qualifiers: [] });
  assert.deepEqual(parseSymbolName(' Server.close '), { raw: 'Server.close', leaf: 'close', qualifiers: ['Server'] });
  assert.deepEqual(parseSymbolName('pkg.mod.func').qualifiers, ['pkg', 'mod']);
  assert.deepEqual(parseSymbolName('ns::Foo::bar'), { raw: 'ns::Foo::bar', leaf: 'bar', qualifiers: ['ns', 'Foo'] });
  assert.deepEqual(parseSymbolName('Server#close').qualifiers, ['Server']);
  assert.deepEqual(parseSymbolName('$obj->run').leaf, 'run');
  assert.deepEqual(parseSymbolName('App\\Http\\Kernel').qualifiers, ['App', 'Http']);
  assert.deepEqual(parseSymbolName('example.com/dep.Greet'), { raw: 'example.com/dep.Greet', leaf: 'Greet', qualifiers: ['dep'] });
  assert.equal(parseSymbolName('close()').leaf, 'close');
  // A CSS class or id selector names its class or id.
  assert.deepEqual(parseSymbolName('.button'), { raw: '.button', leaf: 'button', qualifiers: [] });
  assert.deepEqual(parseSymbolName('#main'), { raw: '#main', leaf: 'main', qualifiers: [] });
});

test('parseSymbolName refuses what is not a name with 400 bad_request', () => {
  for (const bad of ['', '   ', 'a..b', '..x', '.', 'x.', 'two words', 'a.'.repeat(20) + 'b']) {
    assert.throws(
      () => parseSymbolName(bad),
      (e: unknown) => e instanceof AppError && e.code === 'bad_request' && e.status === 400,
      bad,
    );
  }
});

test('moduleChain: suffix dropped, package entry files stand for their directory', () => {
  assert.deepEqual(moduleChain('pkg/mod.py'), ['pkg', 'mod']);
  assert.deepEqual(moduleChain('pkg/__init__.py'), ['pkg']);
  assert.deepEqual(moduleChain('src/util/index.ts'), ['src', 'util']);
  assert.deepEqual(moduleChain('index.d.ts'), []);
  assert.deepEqual(moduleChain('src/server.ts'), ['src', 'server']);
  assert.deepEqual(moduleChain(undefined), []);
});

test('leafOf / chainOf strip server decorations (gopls, qualified names, signatures)', () => {
  assert.equal(leafOf('(*Server).Close'), 'Close');
  assert.equal(leafOf('Server.close'), 'close');
  assert.equal(leafOf('close(code: number)'), 'close');
  assert.deepEqual(chainOf({ name: '(*Server).Close', path: 'srv/server.go' }), { module: ['srv', 'server'], container: ['Server'] });
  assert.deepEqual(chainOf({ name: 'greet', external: true, module: 'greeter', path: 'index.d.ts' }), { module: ['greeter'], container: [] });
});

test('matchQualifiers: suffix is exact, in-order is loose, container beats module', () => {
  assert.deepEqual(matchQualifiers(['Server'], { module: ['src', 'server'], container: ['Server'] }), { fit: 'exact', via: 'container' });
  assert.deepEqual(matchQualifiers(['pkg', 'mod'], { module: ['src', 'pkg', 'mod'], container: [] }), { fit: 'exact', via: 'module' });
  assert.deepEqual(matchQualifiers(['pkg'], { module: ['src', 'pkg', 'mod'], container: [] }), { fit: 'loose', via: 'module' });
  assert.deepEqual(matchQualifiers(['server'], { module: ['src'], container: ['Server'] }).fit, 'loose');
  assert.deepEqual(matchQualifiers(['Other'], { module: ['src', 'server'], container: ['Server'] }).fit, 'none');
  assert.deepEqual(matchQualifiers([], { module: ['a'], container: [] }), { fit: 'exact', via: 'none' });
});

const sym = (name: string, path: string, container?: string, kind = 'function'): SymbolLike => ({ name, path, container, kind });

test('rank: exact, loose (case), fuzzy (prefix), none', () => {
  const n = parseSymbolName('close');
  assert.equal(rank(n, sym('close', 'a.ts'))?.tier, 'exact');
  assert.equal(rank(n, sym('Close', 'a.ts'))?.tier, 'loose');
  assert.equal(rank(n, sym('closeAll', 'a.ts'))?.tier, 'fuzzy');
  assert.equal(rank(n, sym('open', 'a.ts')), undefined);
});

test('select: Server.close is the method of Server, not a free close() in Server.ts', () => {
  const symbols = [
    sym('close', 'src/util.ts'),
    sym('close', 'src/Server.ts'),
    sym('close', 'src/server.ts', 'Server', 'method'),
    sym('Server', 'src/server.ts', undefined, 'class'),
  ];
  const s = select(parseSymbolName('Server.close'), symbols);
  assert.equal(s.tier, 'exact');
  assert.deepEqual(
    s.chosen.map((r) => [r.symbol.path, r.symbol.container]),
    [['src/server.ts', 'Server']],
  );
});

test('select: plain name with two definitions is ambiguous (two candidates, no guess)', () => {
  const s = select(parseSymbolName('close'), [sym('close', 'src/util.ts'), sym('close', 'src/server.ts', 'Server', 'method')]);
  assert.equal(s.tier, 'exact');
  assert.equal(s.chosen.length, 2);
});

test('select: overloads in one file and container collapse to one candidate', () => {
  const s = select(parseSymbolName('format'), [sym('format', 'src/fmt.ts'), sym('format', 'src/fmt.ts'), sym('format', 'src/fmt.ts')]);
  assert.equal(s.chosen.length, 1);
});

test('select: exact before loose before nothing; fuzzy only suggested', () => {
  const both = select(parseSymbolName('close'), [sym('Close', 'a.go'), sym('close', 'b.ts')]);
  assert.equal(both.tier, 'exact');
  assert.deepEqual(
    both.chosen.map((r) => r.symbol.path),
    ['b.ts'],
  );
  const loose = select(parseSymbolName('close'), [sym('Close', 'a.go')]);
  assert.equal(loose.tier, 'loose');
  const none = select(parseSymbolName('clos'), [sym('close', 'b.ts'), sym('closeAll', 'c.ts')]);
  assert.equal(none.tier, undefined);
  assert.deepEqual(
    none.suggestions.map((s) => s.name),
    ['close', 'closeAll'],
  );
});

test('select: pkg.mod.func by module path; mod.func too; other.func not', () => {
  const symbols = [sym('func', 'pkg/mod.py'), sym('func', 'pkg/other.py')];
  assert.deepEqual(
    select(parseSymbolName('pkg.mod.func'), symbols).chosen.map((r) => r.symbol.path),
    ['pkg/mod.py'],
  );
  assert.deepEqual(
    select(parseSymbolName('mod.func'), symbols).chosen.map((r) => r.symbol.path),
    ['pkg/mod.py'],
  );
  assert.deepEqual(select(parseSymbolName('nope.func'), symbols).chosen, []);
});
