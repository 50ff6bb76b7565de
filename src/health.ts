// What /readyz reports: the jail canary's verdict per phase, whether the store is
// writable, and each server row's availability. Readiness is only ever claimed
// from facts proved at boot; until the canary has run, everything is "unproved".
import type { EditOp, GraphOp } from './api/schemas.js';

/** A phase (or the store) proved, or why not in one sentence (missing bwrap, filter not applied, …). */
export type PhaseVerdict = { ok: true } | { ok: false; reason: string };

export interface ServerAvailability {
  available: boolean;
  version?: string;
  reason?: string;
  /** The call and type hierarchy ops it answers: declared by its row, then as a session's capabilities said. */
  hierarchy_ops?: GraphOp[];
  hierarchy_ops_from?: 'row' | 'session';
  /** Where its toolchain lives, when not the host's /usr (a system root of its own). */
  toolchain?: string;
  /** The edit ops (rename, codeActions) it answers: declared by its row, then as a session's capabilities said. */
  edit_ops?: EditOp[];
  edit_ops_from?: 'row' | 'session';
}

export class Health {
  jail: { serve: PhaseVerdict; fetch: PhaseVerdict } = {
    serve: { ok: false, reason: 'jail canary has not run' },
    fetch: { ok: false, reason: 'jail canary has not run' },
  };
  store: PhaseVerdict = { ok: false, reason: 'store not opened' };
  servers: Record<string, ServerAvailability> = {};

  /** True only when both jail phases were proved and the store is writable. */
  get ready(): boolean {
    return this.jail.serve.ok && this.jail.fetch.ok && this.store.ok;
  }

  /** The first reason lspd is not ready, or undefined. */
  get reason(): string | undefined {
    if (!this.jail.serve.ok) return `serve jail: ${this.jail.serve.reason}`;
    if (!this.jail.fetch.ok) return `fetch jail: ${this.jail.fetch.reason}`;
    if (!this.store.ok) return `store: ${this.store.reason}`;
    return undefined;
  }

  /** Whether a request that would run a jailed process may proceed. */
  get jailReady(): boolean {
    return this.jail.serve.ok && this.jail.fetch.ok;
  }
}
