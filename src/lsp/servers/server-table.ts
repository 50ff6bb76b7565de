// The closed table of language servers. No caller ever supplies a command; adding a
// language is adding a row (rows/, typed by server-row.ts) and a fixture test.
// Availability and version are probed at boot from the installed files (nothing is
// executed outside the jail) and shown in /readyz; a row whose server is absent
// stays in the table, reported unavailable with why.
import type { Config } from '../../config.js';
import type { ServerAvailability } from '../../health.js';
import type { Language } from '../../languages.js';
import { DEFAULT_DEBIAN13_ROOT } from '../../config.js';
import type { ServerPaths, ServerRow } from './server-row.js';
import { cRow } from './rows/c.js';
import { goRow } from './rows/go.js';
import { imageOnlyRows } from './rows/image-only.js';
import { phpRow } from './rows/php.js';
import { pythonRow } from './rows/python.js';
import { rustRow } from './rows/rust.js';
import { shellRow } from './rows/shell.js';
import { svelteRow } from './rows/svelte.js';
import { typescriptWebRow } from './rows/typescript-web.js';
import { astroRow } from './rows/astro.js';
import { cssRow } from './rows/css.js';
import { typescriptRows } from './rows/typescript.js';
import { vueRow } from './rows/vue.js';
import { angularRow } from './rows/angular.js';

/** The real table. Order matters: among rows claiming a language and selected, the first wins. */
export function defaultServerRows(p: ServerPaths): ServerRow[] {
  return [
    ...typescriptRows(p),
    pythonRow(p),
    goRow(),
    cRow(),
    phpRow(p),
    shellRow(p),
    rustRow(p.debian13Root ?? DEFAULT_DEBIAN13_ROOT),
    vueRow(p),
    angularRow(p),
    svelteRow(p),
    astroRow(p),
    typescriptWebRow(p),
    cssRow(p),
    ...imageOnlyRows(),
  ];
}

/** A view of the rows for one configuration: choice per language, lookups by name. */
export class ServerTable {
  readonly rows: readonly ServerRow[];
  private readonly byName = new Map<string, ServerRow>();
  private readonly config: Config;

  constructor(rows: readonly ServerRow[], config: Config) {
    this.rows = rows;
    this.config = config;
    for (const r of rows) {
      if (this.byName.has(r.name)) throw new Error(`server table: duplicate row ${r.name}`);
      if (!r.argv[0]?.startsWith('/')) throw new Error(`server table: ${r.name} argv[0] must be absolute`);
      this.byName.set(r.name, r);
    }
  }

  get(name: string): ServerRow | undefined {
    return this.byName.get(name);
  }

  /**
   * The server for a language: a row that `takesOver` it in a root holding one of
   * that row's languages (`rootLanguages`) and `usable` there (installed), else the
   * first row claiming it whose `selectedWhen` holds. Deterministic by table order;
   * there is no fallback to another row when the chosen one is unavailable (an
   * operator who chose tsserver wants tsserver), but for a take-over.
   */
  choose(language: Language, rootLanguages: readonly Language[] = [], usable: (r: ServerRow) => boolean = () => true): ServerRow | undefined {
    // Loops, not closures: this runs on every query.
    for (const r of this.rows)
      if (r.takesOver?.includes(language) && (r.takesOverIn ?? r.languages).some((l) => rootLanguages.includes(l)) && this.selected(r) && usable(r)) return r;
    for (const r of this.rows) if (r.languages.includes(language) && this.selected(r)) return r;
    return undefined;
  }

  private selected(r: ServerRow): boolean {
    return r.selectedWhen?.(this.config) ?? true;
  }

  /** Probe every row; absent servers are reported with the reason, never dropped. */
  async probeAll(): Promise<Record<string, ServerAvailability>> {
    const out: Record<string, ServerAvailability> = {};
    await Promise.all(
      this.rows.map(async (r) => {
        try {
          out[r.name] = await r.probe();
        } catch (err) {
          out[r.name] = { available: false, reason: `probe failed: ${(err as Error).message}` };
        }
      }),
    );
    return out;
  }
}
