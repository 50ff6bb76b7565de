// @astrojs/language-server with the tree's code kept out: argv[2] is the package's
// directory (inside the jail), taken out of argv before the server reads it (--stdio).
// The server would require() code from the workspace's node_modules: the
// @astrojs/svelte and @astrojs/vue editor integrations (dist/editor.cjs, when the
// project holds .svelte/.vue files) and prettier with its Astro plugin (formatting).
// Its module exports are looked up at each call, so replacing them here is enough;
// its other look-ups in the tree read package.json files and .d.ts types, never code.
'use strict';
const dir = process.argv.splice(2, 1)[0];
const pkg = require(`${dir}/dist/importPackage.js`);
pkg.importSvelteIntegration = () => undefined;
pkg.importVueIntegration = () => undefined;
pkg.importPrettier = () => undefined;
pkg.getPrettierPluginPath = () => undefined;
require(`${dir}/dist/nodeServer.js`);
