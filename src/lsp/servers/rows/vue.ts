// Vue single-file components: vue-language-server 3.x beside typescript-language-server
// over the pinned TypeScript 5 with @vue/typescript-plugin, both in one SERVE jail
// behind vue-hybrid.mjs, which speaks LSP to lspd as one server (who answers what:
// its header, and LLM.md "One TS project, several servers").
import { join } from 'node:path';
import { PROJECT_DIR } from '../../../jail/policy.js';
import { NODE, probeFiles } from '../server-env.js';
import { packageClosureBinds } from '../package-binds.js';
import { nodeModulesOf, type ServerPaths, type ServerRow } from '../server-row.js';
import { tslsOptions, typescriptRows } from './typescript.js';

/** The plugin, what it requires and TypeScript, as a node_modules of their own: tsserver's only plugin probe location. */
const VUE_AT = '/opt/lspd-vue';
const HYBRID = { host: join(PROJECT_DIR, 'src', 'lsp', 'servers', 'rows', 'vue-hybrid.mjs'), at: '/opt/lspd/vue/hybrid.mjs' };

export function vueRow(p: ServerPaths): ServerRow {
  const { host, at } = nodeModulesOf(p);
  const tsLib = `${VUE_AT}/node_modules/typescript/lib`;
  const { selectedWhen: _byConfig, ...tsserver } = typescriptRows(p).find((r) => r.name === 'typescript-language-server')!;
  return {
    ...tsserver,
    // Code from the tree: none, as the typescript-language-server row. tsserver loads
    // @vue/typescript-plugin as a global plugin from VUE_AT, and a tsconfig's
    // compilerOptions.plugins resolve from there too: only the plugin's own
    // dependency closure and TypeScript are bound there (package-binds.ts), none of
    // them a plugin but the Vue one; --allowLocalPluginLoads is never given, so the
    // tree and its fetched node_modules name nothing that loads. The generated
    // template code's types come from the tree's `vue` (fetched): without it a
    // template's expressions are `any` and their errors unseen.
    name: 'vue',
    languages: ['vue'],
    // One program for the .ts and the .vue files of a root holding .vue files: TS 7
    // cannot see .vue files, so its references from a .ts file would miss their uses.
    takesOver: ['typescript', 'javascript'],
    argv: [NODE, HYBRID.at, '--ts', at('typescript-language-server/lib/cli.mjs'), '--vue', at('@vue/language-server/index.js'), '--tsdk', tsLib],
    binds: [HYBRID, ...packageClosureBinds(p.nodeModulesHost, ['@vue/typescript-plugin', 'typescript'], VUE_AT)],
    // Split by vue-hybrid.mjs: `ts` to typescript-language-server, `vue` to vue-language-server.
    initializationOptions: {
      ts: tslsOptions(`${tsLib}/tsserver.js`, [{ name: '@vue/typescript-plugin', location: VUE_AT, languages: ['vue'] }]),
      vue: {},
    },
    // Readiness, hierarchy and edit ops are typescript-language-server's (its row):
    // vue-hybrid.mjs holds the vue server's diagnostics until tsserver's first; measured
    // in test/lang-vue: incomingCalls and a rename from a .ts reach the .vue uses.
    probe: () =>
      probeFiles(
        [
          HYBRID.host,
          host('@vue/language-server/index.js'),
          host('@vue/typescript-plugin/index.js'),
          host('typescript-language-server/lib/cli.mjs'),
          host('typescript/lib/tsserver.js'),
        ],
        host('@vue/language-server/package.json'),
        host('@vue/typescript-plugin/package.json'),
        host('typescript-language-server/package.json'),
        host('typescript/package.json'),
      ),
  };
}
