// svelte-language-server with the tree's code kept out and the daemon's pinned Svelte 5
// as its compiler: argv[2] is the server's package directory, argv[3] the pinned
// svelte's (both inside the jail), taken out of argv before the server reads it.
// Why not the server's own `isTrusted: false`: it also turns off every Svelte compiler
// diagnostic (warnings, a11y, Svelte's own errors), and its fallback compiler is its
// dependency, Svelte 4, which read runes ($state, $props) as unknown names. So the
// server runs trusted, and what trust would load from the tree is replaced here:
// - the workspace's svelte.config.js / vite.config.* (preprocessors: the tree's code)
//   is never imported: every config is the server's own fallback (TypeScript only);
// - svelte: the pinned one, compiler and types, for Svelte 3/4 components too (legacy
//   mode); svelte-preprocess and prettier are never loaded (no formatting is asked);
// - other packages it looks up in the tree (getPackageInfo) are read as package.json.
// Its callers look these up on the module's exports (or the loader's instance) at
// each call, so replacing them here is enough.
'use strict';
const [server, svelte] = process.argv.splice(2, 2);
const pkg = require(`${server}/dist/src/importPackage.js`);
const { configLoader } = require(`${server}/dist/src/lib/documents/configLoader.js`);
const [major, minor, patch] = require(`${svelte}/package.json`).version.split('.').map(Number);
const own = pkg.getPackageInfo;
pkg.getPackageInfo = (name, fromPath, useFallback) =>
  name === 'svelte' ? { path: svelte, version: { full: `${major}.${minor}.${patch}`, major, minor, patch } } : own(name, fromPath, useFallback);
pkg.importSvelte = () => require(`${svelte}/compiler`);
pkg.importSveltePreprocess = () => {
  throw new Error('lspd: svelte-preprocess is not loaded from the tree');
};
pkg.importPrettier = () => {
  throw new Error('lspd: prettier is not loaded from the tree');
};
configLoader.loadConfig = async function (configPath, directory) {
  return {
    config: { ...this.useFallbackPreprocessor(directory, true, 'svelte'), compilerOptions: { dev: true, generate: false } },
    configFilePath: configPath,
  };
};
require(`${server}/bin/server.js`);
