// Packages the dependency tests serve (test/helpers/composer-repo.ts,
// pypi-index.ts) and the trees that use them: shared by the FETCH tests and the
// daemon-level tests of definitions into dependencies.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ComposerPackage } from './composer-repo.js';
import { scratchDir } from './fetch-env.js';
import type { PyProject } from './pypi-index.js';

/** Writes a marker into the working directory (composer's: the deps copy) when PHP runs it. */
const marker = (name: string) => `@php -r "file_put_contents(getcwd().'/${name}', 'ran');"`;

export const greeter: ComposerPackage = {
  name: 'acme/greeter',
  version: '1.0.0',
  autoload: { 'psr-4': { 'Acme\\Greeter\\': 'src/' } },
  // A dependency's scripts are never composer's to run; here for good measure.
  scripts: { 'post-install-cmd': [marker('DEP_SCRIPT_RAN')], 'post-package-install': [marker('DEP_SCRIPT_RAN')] },
  files: {
    'src/Greeter.php': [
      '<?php',
      '',
      'namespace Acme\\Greeter;',
      '',
      '/** Greets people. */',
      'class Greeter',
      '{',
      '    public function hello(string $name): string',
      '    {',
      "        return 'hello ' . $name;",
      '    }',
      '}',
      '',
    ].join('\n'),
  },
};

/** A composer plugin: composer runs its activate() at install unless plugins are off. */
export const hooks: ComposerPackage = {
  name: 'acme/hooks',
  version: '1.0.0',
  type: 'composer-plugin',
  require: { 'composer-plugin-api': '^2.0' },
  autoload: { 'psr-4': { 'Acme\\Hooks\\': 'src/' } },
  extra: { class: 'Acme\\Hooks\\Plugin' },
  files: {
    'src/Plugin.php': [
      '<?php',
      'namespace Acme\\Hooks;',
      'use Composer\\Composer;',
      'use Composer\\IO\\IOInterface;',
      'use Composer\\Plugin\\PluginInterface;',
      'class Plugin implements PluginInterface',
      '{',
      "    public function activate(Composer $c, IOInterface $io) { file_put_contents(getcwd() . '/PLUGIN_RAN', 'ran'); }",
      '    public function deactivate(Composer $c, IOInterface $io) {}',
      '    public function uninstall(Composer $c, IOInterface $io) {}',
      '}',
      '',
    ].join('\n'),
  },
};

/** A tree requiring `lock`'s packages, with root scripts that would write markers and settings lspd must not obey. */
export function composerTree(lock: Record<string, unknown>, extraRequire: Record<string, string> = {}): string {
  const dir = scratchDir('lspd-composer-tree-');
  const require = Object.fromEntries((lock.packages as { name: string; version: string }[]).map((p) => [p.name, p.version]));
  writeFileSync(
    join(dir, 'composer.json'),
    JSON.stringify({
      name: 'acme/app',
      require: { ...require, ...extraRequire },
      autoload: { 'psr-4': { 'App\\': 'src/' } },
      scripts: {
        'pre-install-cmd': [marker('ROOT_SCRIPT_RAN')],
        'post-install-cmd': [marker('ROOT_SCRIPT_RAN')],
        'post-autoload-dump': [marker('ROOT_SCRIPT_RAN')],
      },
      // A vcs repository would run git; secure-http off would let a dist come over plain http from anywhere.
      repositories: [{ type: 'vcs', url: 'https://github.com/acme/evil' }],
      config: { 'secure-http': false, 'allow-plugins': true, 'vendor-dir': 'lib' },
    }),
  );
  writeFileSync(join(dir, 'composer.lock'), JSON.stringify(lock, null, 2));
  writeFileSync(join(dir, 'index.php'), "<?php\n\nuse Acme\\Greeter\\Greeter;\n\n$g = new Greeter();\necho $g->hello('world');\n");
  return dir;
}

export const greetLib: PyProject = {
  name: 'greet-lib',
  version: '1.0.0',
  wheel: {
    'greet_lib/__init__.py': 'from greet_lib.core import greet\n\n__all__ = ["greet"]\n',
    'greet_lib/core.py': 'def greet(name: str) -> str:\n    """Greet someone by name."""\n    return "hello " + name\n',
  },
};

/** setup.py that leaves a marker wherever it could write, were it ever run. */
export const onlySdist: PyProject = {
  name: 'only-sdist',
  version: '1.0',
  sdist: {
    'setup.py': [
      'import os',
      "for d in ('/deps/python/top', '/deps/python/top/site-packages', os.getcwd(), os.environ.get('TMPDIR', '/tmp')):",
      '    try:',
      "        open(os.path.join(d, 'SETUP_PY_RAN'), 'w').write('ran')",
      '    except OSError:',
      '        pass',
      'from setuptools import setup',
      "setup(name='only-sdist', version='1.0')",
      '',
    ].join('\n'),
    'PKG-INFO': 'Metadata-Version: 2.1\nName: only-sdist\nVersion: 1.0\n',
  },
};
