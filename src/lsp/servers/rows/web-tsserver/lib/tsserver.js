// The tsserver of the `typescript-web` row (rows/typescript-web.ts), run inside its SERVE
// jail: the pinned TypeScript's own tsserver, with every `svelte` and `svelte/...`
// that anything in this process requires resolved to the daemon's pinned Svelte 5.
// typescript-svelte-plugin requires `svelte/compiler` from the project's directory
// (the tree's fetched node_modules/svelte: code the tree names) to read its version
// and, for Svelte 4+, to parse; svelte2tsx does from its own. Named lib/tsserver.js
// beside a package.json that carries the TypeScript version, because that is how
// typescript-language-server reads a `tsserver.path`'s version.
'use strict';
const Module = require('node:module');

/** The row's own node_modules (typescript, the plugin, svelte2tsx, the pinned svelte). */
const AT = '/opt/lspd-web-ts';
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, isMain, options) {
  if (request === 'svelte' || request.startsWith('svelte/')) return resolve.call(this, request, parent, isMain, { paths: [AT] });
  return resolve.call(this, request, parent, isMain, options);
};
require(`${AT}/node_modules/typescript/lib/tsserver.js`);
