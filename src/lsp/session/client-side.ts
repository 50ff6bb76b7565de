// What lspd says to a language server as its client: the initialize parameters
// (the capabilities we advertise decide what servers send: TS 7 pulls diagnostics
// only when the client can pull; LocationLinks when we accept them) and the answers
// to the few requests a server makes of its client. Pure: the session sends them.
// In session/, not wire/: it reads the row and the in-jail paths, and wire/ (the
// transport) imports nothing above it.
// https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#initialize
import { basename } from 'node:path';
import { encodingToLsp } from '../wire/encoding.js';
import { jailPathToFileUri, treeJailPath } from '../answer/paths.js';
import { readsServerStatus, settingFor, type ServerRow } from '../servers/server-row.js';
import { METHOD_NOT_FOUND } from '../wire/transport.js';

export function initializeParams(row: ServerRow, wsUri: string, wsPath: string): object {
  return {
    // In the jail's PID namespace our pid names nothing: Node servers and tsgo
    // poll it and exit after 3-5 s when it is given. null means "no parent to watch".
    processId: null,
    clientInfo: { name: 'lspd' },
    rootUri: wsUri,
    rootPath: wsPath,
    workspaceFolders: [{ uri: wsUri, name: basename(wsPath) || 'src' }],
    initializationOptions:
      typeof row.initializationOptions === 'function' ? (row.initializationOptions as (at: string) => unknown)(wsPath) : row.initializationOptions,
    trace: 'off',
    capabilities: {
      general: { positionEncodings: row.encodings.map(encodingToLsp) },
      window: { workDoneProgress: true },
      // Edits (rename) come back as TextDocumentEdits; no resource operations: lspd renders patches of existing files only.
      workspace: { configuration: true, workspaceFolders: true, symbol: { dynamicRegistration: false }, workspaceEdit: { documentChanges: true } },
      textDocument: {
        synchronization: { dynamicRegistration: false, didSave: false },
        definition: { linkSupport: true },
        typeDefinition: { linkSupport: true },
        implementation: { linkSupport: true },
        references: {},
        hover: { contentFormat: ['markdown', 'plaintext'] },
        documentSymbol: { hierarchicalDocumentSymbolSupport: true },
        publishDiagnostics: { relatedInformation: false, versionSupport: false },
        // TS 7 answers textDocument/diagnostic only when the client says it can pull.
        diagnostic: { dynamicRegistration: false, relatedDocumentSupport: false },
        // Call and type hierarchies (LSP 3.16/3.17): the /v1/code/lsp graph ops.
        callHierarchy: { dynamicRegistration: false },
        typeHierarchy: { dynamicRegistration: false },
        rename: { dynamicRegistration: false, prepareSupport: true },
        // Code actions as literals (not bare Commands), their edits resolved on request
        // (codeAction/resolve) where a server defers them: lspd renders the edit as a patch.
        codeAction: {
          dynamicRegistration: false,
          codeActionLiteralSupport: {
            codeActionKind: {
              valueSet: ['', 'quickfix', 'refactor', 'refactor.extract', 'refactor.inline', 'refactor.rewrite', 'source', 'source.organizeImports'],
            },
          },
          isPreferredSupport: true,
          dataSupport: true,
          resolveSupport: { properties: ['edit'] },
        },
      },
      // rust-analyzer's "nothing left to load" (readiness `quiescentStatus`); no other row is offered it.
      ...(readsServerStatus(row.readiness) ? { experimental: { serverStatusNotification: true } } : {}),
    },
  };
}

/** The answer to a server→client request (METHOD_NOT_FOUND for anything we do not serve). */
export function answerServerRequest(row: ServerRow, workspace: string, method: string, params: unknown, settings = row.settings): unknown {
  switch (method) {
    case 'workspace/configuration': {
      const items = (params as { items?: { section?: unknown }[] } | undefined)?.items;
      return Array.isArray(items) ? items.slice(0, 256).map((i) => settingFor(row, i?.section, settings)) : [];
    }
    case 'workspace/workspaceFolders': {
      const p = treeJailPath(workspace);
      return [{ uri: jailPathToFileUri(p), name: basename(p) || 'src' }];
    }
    case 'client/registerCapability':
    case 'client/unregisterCapability':
    case 'window/workDoneProgress/create':
    case 'window/showMessageRequest':
      return null;
    case 'window/showDocument':
      return { success: false };
    case 'workspace/applyEdit':
      return { applied: false, failureReason: 'lspd serves read-only trees' };
    default:
      return METHOD_NOT_FOUND;
  }
}
