// TS/JS files of a root that holds .svelte or .astro files: typescript-language-server
// over the pinned TypeScript 5 with typescript-svelte-plugin and @astrojs/ts-plugin.
import { join } from 'node:path';
import { PROJECT_DIR } from '../../../jail/policy.js';
import { probeFiles } from '../server-env.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';
import { packageClosureBinds } from '../package-binds.js';
import { tslsOptions, typescriptRows } from './typescript.js';
import { SVELTE } from './svelte.js';

/** The plugins, what they require, TypeScript and the pinned Svelte as a node_modules of their own (tsserver's only plugin probe location). */
const WEB_TS_AT = '/opt/lspd-web-ts';
/** The tsserver that resolves every `svelte` require to the pinned one (web-tsserver/lib/tsserver.js), with the package.json that names its version. */
const TSSERVER = { host: join(PROJECT_DIR, 'src', 'lsp', 'servers', 'rows', 'web-tsserver'), at: '/opt/lspd/web-tsserver' };
const PLUGINS = ['typescript-svelte-plugin', '@astrojs/ts-plugin'];

export function typescriptWebRow(p: ServerPaths): ServerRow {
  const { host } = nodeModulesOf(p);
  const { selectedWhen: _byConfig, ...tsserver } = typescriptRows(p).find((r) => r.name === 'typescript-language-server')!;
  return {
    // The plugins put the components into the TS program (svelte2tsx; Volar's astro2tsx
    // with the Astro compiler), so references, rename and call graphs from a .ts file
    // reach their uses in .svelte and .astro files: TS 7 cannot see those files. What is
    // asked from a component stays its own server's (svelte-language-server,
    // astro-language-server): the plugins answer nothing asked there.
    // Code from the tree: none, as the typescript-language-server row. The plugins are
    // global plugins from WEB_TS_AT (their closures, TypeScript and the pinned Svelte
    // only); typescript-svelte-plugin requires `svelte/compiler` from the project,
    // which web-tsserver/lib/tsserver.js resolves to the pinned Svelte 5; the Astro
    // plugin reads the tree's `astro` types (.d.ts) and runs none of it.
    ...tsserver,
    name: 'typescript-web',
    takesOver: ['typescript', 'javascript'],
    takesOverIn: ['svelte', 'astro'],
    binds: [
      TSSERVER,
      ...packageClosureBinds(p.nodeModulesHost, [...PLUGINS, 'typescript'], WEB_TS_AT),
      { host: host(SVELTE), at: `${WEB_TS_AT}/node_modules/svelte` },
    ],
    initializationOptions: tslsOptions(
      `${TSSERVER.at}/lib/tsserver.js`,
      PLUGINS.map((name) => ({ name, location: WEB_TS_AT })),
    ),
    probe: () =>
      probeFiles(
        [
          host('typescript-language-server/lib/cli.mjs'),
          host('typescript-svelte-plugin/dist/src/index.js'),
          host('@astrojs/ts-plugin/dist/index.js'),
          host(`${SVELTE}/compiler/index.js`),
          TSSERVER.host,
        ],
        host('typescript-language-server/package.json'),
        host('typescript-svelte-plugin/package.json'),
        host('@astrojs/ts-plugin/package.json'),
        host('typescript/package.json'),
      ),
  };
}
