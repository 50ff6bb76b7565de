// A server's code actions (quick fixes, refactors, source actions) for a range, each
// rendered as lspd answers edits: a patch of the tree (renderWorkspaceEdit, the one
// renderer), never applied. An action that is only a server command, or whose edit
// cannot be rendered whole (a file outside the tree, a file created or deleted), is
// listed without a patch and says why in `patch_unavailable`: the agent still learns
// what the server offers. Nothing a server command would do is ever run.
//
// Bounds: at most MAX_ACTIONS actions are kept (in the server's order, which puts
// preferred fixes first), at most MAX_RESOLVES of them resolved (codeAction/resolve,
// one request each, all within the query's deadline); titles, kinds and command names
// are server text: scrubbed and cut to a few hundred bytes.
// LSP: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_codeAction
import type { Scrubber } from '../lsp/answer/scrub.js';
import { truncateUtf8 } from '../lsp/wire/encoding.js';
import { isObject, type Range } from '../lsp/wire/lsp-types.js';
import { EditError } from './text-edits.js';
import type { RenderedEdit } from './workspace-edit.js';

export const MAX_ACTIONS = 50;
export const MAX_RESOLVES = 20;
const MAX_TITLE_BYTES = 512;
const MAX_KIND_BYTES = 128;

export type Fix = { message: string; range: Range };

export type RenderedAction = {
  title: string;
  kind: string;
  preferred?: true;
  patch?: string;
  files?: RenderedEdit['files'];
  /** The diagnostics the server says this action fixes. */
  fixes?: Fix[];
  /** The server command the action runs (its name), which lspd does not run. */
  command?: string;
  /** API.md's flag: the action is a server command and nothing else. */
  command_only?: true;
  patch_unavailable?: string;
};

export interface CodeActionsAnswer {
  actions: RenderedAction[];
  /** Actions the server offered of the asked kinds, before MAX_ACTIONS. */
  total: number;
  truncated: boolean;
}

export interface ActionContext {
  /** `only` kinds asked; a server may ignore them, so they are applied here too. */
  only?: readonly string[];
  /** Client-side commands whose first argument is the action's WorkspaceEdit (the row's `editCommands`). */
  editCommands?: readonly string[];
  /** Whether the server resolves deferred actions (codeActionProvider.resolveProvider). */
  canResolve: boolean;
  resolve(action: Record<string, unknown>): Promise<unknown>;
  render(edit: unknown): Promise<RenderedEdit>;
  /** The action's diagnostics as the caller sees them (caller's units, scrubbed). */
  fixes(diagnostics: unknown[]): Promise<Fix[]>;
  scrub: Scrubber;
}

/** `kind` is `want` or one of its sub-kinds (LSP: kinds are hierarchical, dot-separated). */
export const kindMatches = (kind: string, want: string) => kind === want || kind.startsWith(`${want}.`);

/** Render the server's answer to textDocument/codeAction. */
export async function renderCodeActions(raw: unknown, ctx: ActionContext): Promise<CodeActionsAnswer> {
  const list = (Array.isArray(raw) ? raw : []).filter(
    (a): a is Record<string, unknown> => isObject(a) && typeof a.title === 'string' && (a.kind === undefined || typeof a.kind === 'string'),
  );
  const only = ctx.only;
  const asked = only ? list.filter((a) => typeof a.kind === 'string' && only.some((w) => kindMatches(a.kind as string, w))) : list;
  const kept = asked.slice(0, MAX_ACTIONS);
  let resolves = 0;
  const actions = await Promise.all(
    kept.map(async (a) => {
      const text = (t: string, max: number) => truncateUtf8(ctx.scrub(t), max);
      // A bare Command (LSP's older form) has `command` as a string and no kind.
      const bare = typeof a.command === 'string';
      const out: RenderedAction = { title: text(a.title as string, MAX_TITLE_BYTES), kind: text(typeof a.kind === 'string' ? a.kind : '', MAX_KIND_BYTES) };
      if (a.isPreferred === true) out.preferred = true;
      if (Array.isArray(a.diagnostics) && a.diagnostics.length > 0) {
        const fixes = await ctx.fixes(a.diagnostics);
        if (fixes.length > 0) out.fixes = fixes;
      }
      const commandName = bare ? a.command : isObject(a.command) ? a.command.command : undefined;
      if (typeof commandName === 'string') out.command = text(commandName, MAX_TITLE_BYTES);
      if (isObject(a.disabled)) {
        const why = typeof a.disabled.reason === 'string' ? a.disabled.reason : 'no reason given';
        out.patch_unavailable = `the server disabled this action here: ${text(why, MAX_TITLE_BYTES)}`;
        return out;
      }
      let edit: unknown = bare ? undefined : a.edit;
      if (edit === undefined && !bare && ctx.canResolve) {
        if (resolves >= MAX_RESOLVES) {
          out.patch_unavailable = `its edit is resolved on request, and lspd resolves at most ${MAX_RESOLVES} actions per query; ask with a smaller range or \`only\``;
          return out;
        }
        resolves++;
        try {
          const r = await ctx.resolve(a);
          if (isObject(r)) {
            edit = r.edit;
            if (out.command === undefined && isObject(r.command) && typeof r.command.command === 'string')
              out.command = text(r.command.command, MAX_TITLE_BYTES);
          }
        } catch (err) {
          if (!isServerError(err)) throw err;
          out.patch_unavailable = `the server could not resolve its edit: ${text(err.message || 'no reason given', MAX_TITLE_BYTES)}`;
          return out;
        }
      }
      const cmd = bare ? a : a.command;
      if ((edit === undefined || edit === null) && isObject(cmd) && ctx.editCommands?.includes(cmd.command as string) && Array.isArray(cmd.arguments)) {
        // Its argument is the edit itself: read, not run.
        edit = cmd.arguments[0];
        delete out.command;
      }
      if (edit === undefined || edit === null) {
        if (out.command !== undefined) out.command_only = true;
        out.patch_unavailable =
          out.command !== undefined
            ? `the action is a server command (${out.command}) with no edit to show: lspd runs no server command`
            : 'the server sent no edit for it';
        return out;
      }
      try {
        const r = await ctx.render(edit);
        if (r.patch === '') out.patch_unavailable = 'its edit changes nothing';
        else Object.assign(out, { patch: r.patch, files: r.files });
        // A command beside an edit (a rename prompt after an extract) is not run; the patch is the edit alone.
      } catch (err) {
        if (!(err instanceof EditError)) throw err;
        out.patch_unavailable = text(err.message, MAX_TITLE_BYTES);
      }
      return out;
    }),
  );
  return { actions, total: asked.length, truncated: asked.length > kept.length };
}

/** A JSON-RPC error answer (vscode-jsonrpc's ResponseError has a numeric code). */
const isServerError = (err: unknown): err is Error => err instanceof Error && typeof (err as { code?: unknown }).code === 'number';
