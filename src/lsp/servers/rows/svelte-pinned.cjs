// svelte-language-server with the daemon's pinned Svelte 5 compiler: argv[2] is the
// server's package directory, argv[3] the pinned svelte's (both inside the jail), taken
// out of argv before the server reads it (--stdio).
// Why: with `isTrusted: false` (so the tree's svelte.config.js and node_modules/svelte
// are never loaded) it falls back to the compiler it depends on, Svelte 4, and reads
// every component as Svelte 4: runes ($state, $props, $derived) were "Cannot find
// name" errors and their values `any`. Svelte 5 reads Svelte 3/4 components in its
// legacy mode, so one pinned Svelte 5 serves both. Its callers look these exports up
// at each call, so replacing them here is enough.
'use strict';
const [server, svelte] = process.argv.splice(2, 2);
const pkg = require(`${server}/dist/src/importPackage.js`);
const [major, minor, patch] = require(`${svelte}/package.json`).version.split('.').map(Number);
const own = pkg.getPackageInfo;
pkg.getPackageInfo = (name, fromPath, useFallback) =>
  name === 'svelte' ? { path: svelte, version: { full: `${major}.${minor}.${patch}`, major, minor, patch } } : own(name, fromPath, useFallback);
pkg.importSvelte = () => require(`${svelte}/compiler`);
require(`${server}/bin/server.js`);
