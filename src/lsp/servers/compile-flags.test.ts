import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterCommand, filterFlags, splitCommand } from './compile-flags.js';

describe('filterFlags: arguments a tree may not give clangd', () => {
  it('removes plugins, cc1 pass-throughs, response files, config files and toolchain paths', () => {
    const bad: [string[], string[]][] = [
      [['-fplugin=./p.so'], ['-fplugin=./p.so']],
      [['-fplugin-arg-p-x=1'], ['-fplugin-arg-p-x=1']],
      [['-fpass-plugin=./p.so'], ['-fpass-plugin=./p.so']],
      [
        ['-Xclang', '-load', '-Xclang', './p.so'],
        ['-Xclang', '-load', '-Xclang', './p.so'],
      ],
      [['-Xclang=-load'], ['-Xclang=-load']],
      [
        ['-Xpreprocessor', '-load'],
        ['-Xpreprocessor', '-load'],
      ],
      [
        ['-Xarch_x86_64', '-fplugin=./p.so'],
        ['-Xarch_x86_64', '-fplugin=./p.so'],
      ],
      [
        ['-Xopenmp-target=x86_64', '-fplugin=p'],
        ['-Xopenmp-target=x86_64', '-fplugin=p'],
      ],
      [
        ['-load', './p.so'],
        ['-load', './p.so'],
      ],
      [
        ['-plugin', 'p'],
        ['-plugin', 'p'],
      ],
      [
        ['-add-plugin', 'p'],
        ['-add-plugin', 'p'],
      ],
      [
        ['-plugin-arg-p', 'x'],
        ['-plugin-arg-p', 'x'],
      ],
      [
        ['-mllvm', '-load=./p.so'],
        ['-mllvm', '-load=./p.so'],
      ],
      [['@flags.rsp'], ['@flags.rsp']],
      [
        ['--config', 'evil.cfg'],
        ['--config', 'evil.cfg'],
      ],
      [['--config=evil.cfg'], ['--config=evil.cfg']],
      [['--config-user-dir=/src'], ['--config-user-dir=/src']],
      [
        ['-B', '/src/bin'],
        ['-B', '/src/bin'],
      ],
      [['-B/src/bin'], ['-B/src/bin']],
      [['--prefix=/src/bin'], ['--prefix=/src/bin']],
      [['--gcc-toolchain=/src/gcc'], ['--gcc-toolchain=/src/gcc']],
      [
        ['--gcc-toolchain', '/src/gcc'],
        ['--gcc-toolchain', '/src/gcc'],
      ],
      [
        ['-ccc-install-dir', '/src'],
        ['-ccc-install-dir', '/src'],
      ],
      [['-specs=/src/x.specs'], ['-specs=/src/x.specs']],
      [['--driver-mode=cl'], ['--driver-mode=cl']],
      [['-Wp,-load,./p.so'], ['-Wp,-load,./p.so']],
      [['-fuse-ld=/src/ld'], ['-fuse-ld=/src/ld']],
      [['-cc1'], ['-cc1']],
    ];
    for (const [args, removed] of bad) {
      const f = filterFlags(['-DKEEP', ...args, '-Iinclude']);
      assert.deepEqual(f.args, ['-DKEEP', '-Iinclude'], JSON.stringify(args));
      assert.deepEqual(f.removed, removed, JSON.stringify(args));
    }
  });

  it('keeps what only chooses headers, macros, language and warnings', () => {
    const good = [
      '-I/src/include',
      '-isystem',
      '/src/third_party',
      '-DX=1',
      '-UY',
      '-std=c11',
      '-include',
      'config.h',
      '--sysroot=/src/sysroot',
      '-Wall',
      '-Wno-unused',
      '-O2',
      '-x',
      'c++',
      '--target=arm-none-eabi',
      '-fno-exceptions',
      '-c',
      'a.c',
    ];
    assert.deepEqual(filterFlags(good), { args: good, removed: [] });
  });

  it('a dangling pass-through at the end removes only itself', () => {
    assert.deepEqual(filterFlags(['-DA', '-Xclang']), { args: ['-DA'], removed: ['-Xclang'] });
  });
});

describe('filterCommand: the driver is a bare compiler name', () => {
  it('cuts paths and launchers; keeps target prefixes and versions', () => {
    assert.deepEqual(filterCommand(['/usr/bin/cc', '-c', 'a.c'], false).args, ['cc', '-c', 'a.c']);
    assert.deepEqual(filterCommand(['/opt/x/bin/arm-none-eabi-gcc', '-c', 'a.c'], false).args, ['gcc', '--target=arm-none-eabi', '-c', 'a.c']);
    assert.deepEqual(filterCommand(['/opt/x/bin/arm-none-eabi-gcc', '-c', 'a.c'], false).removed, []);
    assert.deepEqual(filterCommand(['ccache', '/usr/bin/clang++-14', '-c', 'a.cc'], true).args, ['clang++-14', '-c', 'a.cc']);
    assert.deepEqual(filterCommand(['/usr/bin/cc', '-c', 'a.c'], false).removed, [], 'a path in front of a compiler is only cut, not a refusal');
  });
  it('replaces a driver that is no known compiler (a tree-chosen program, a config file beside it)', () => {
    const f = filterCommand(['/src/tools/evil-wrapper', '-fplugin=./p.so', '-c', 'a.cc'], true);
    assert.deepEqual(f.args, ['clang++', '-c', 'a.cc']);
    assert.deepEqual(f.removed, ['/src/tools/evil-wrapper', '-fplugin=./p.so']);
    assert.deepEqual(filterCommand(['./p.so'], false).args, ['clang']);
    // A prefixed name makes clang's driver look for <prefix>.cfg beside it: no prefix survives.
    assert.deepEqual(filterCommand(['/src/tools/evil-cc', '-c', 'a.c'], false), { args: ['cc', '-c', 'a.c'], removed: ['/src/tools/evil-cc'] });
    assert.deepEqual(filterCommand(['../x/-fplugin=p.so-gcc', '-c', 'a.c'], false).args, ['gcc', '-c', 'a.c']);
  });
});

describe('splitCommand', () => {
  it('splits like a shell: quotes, escapes, runs of blanks', () => {
    assert.deepEqual(splitCommand('cc  -c a.c'), ['cc', '-c', 'a.c']);
    assert.deepEqual(splitCommand(`cc -DX="a b" -DY='c d' -DZ=e\\ f -c "x.c"`), ['cc', '-DX=a b', '-DY=c d', '-DZ=e f', '-c', 'x.c']);
    assert.deepEqual(splitCommand('cc -DQ="\\"q\\"" ""'), ['cc', '-DQ="q"', '']);
    assert.deepEqual(splitCommand('  '), []);
  });
  it('a command smuggling a plugin is caught once split', () => {
    const argv = splitCommand(`cc -Xclang -load -Xclang ./p.so '-fplugin=./p.so' @rsp -c a.c`);
    assert.deepEqual(filterCommand(argv, false).args, ['cc', '-c', 'a.c']);
  });
});
