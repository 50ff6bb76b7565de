// The Python fetcher: wheels only, from a lock the tree already has, with Debian's
// python3 and pip (python3-pip), in the FETCH jail. The work inside the jail is
// src/fetch/pip-driver.py (bound read-only; its header says why each pip flag): it
// reads the workspace's lock (uv.lock, poetry.lock, Pipfile.lock, else pinned
// requirements*.txt), runs `pip install --only-binary=:all: --no-deps --target`,
// and writes a report of what it installed and what it skipped (no wheel for this
// platform, not pinned, not from an index) into the workspace's output dir.
//
// SERVE: the target (site-packages) is bound read-only at
// /deps/python/top/site-packages (or ws/<ws>/...), and pyright is given it as an
// extra path (src/lsp/session/dependencies.ts): unlike node_modules or vendor, nothing in a
// Python tree says where installed packages live.
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { PROJECT_DIR } from '../jail/policy.js';
import { isPlainDir, isRegularFile } from './ecosystems.js';
import { registryReason } from './registry-reason.js';
import { PYTHON_STORE_REL, PYTHON_TMP_REL, under, writableDepsDir, wsRel, type ServeMount, type StepContext, type StepSpawn } from './step.js';
import { WHEELS_OUT } from './python-wheels.js';
import type { Bind } from '../jail/types.js';
import { DEPS_AT, PIP_DRIVER_AT, TREE_AT } from '../jail/layout.js';

const DRIVER_HOST = join(PROJECT_DIR, 'src', 'fetch', 'pip-driver.py');
export const SITE_PACKAGES = 'site-packages';
const REPORT = 'report.json';
const MAX_REPORT_BYTES = 4 * 1024 * 1024;
const MAX_SKIPPED = 200;

export async function preparePython(ctx: StepContext, ws: string): Promise<StepSpawn> {
  if (!ctx.tools.python || !ctx.tools.pip) throw new Error('python3-pip not installed');
  const out = await writableDepsDir(ctx, wsRel('python', ws));
  const at = out.at;
  await mkdir(join(out.host, SITE_PACKAGES), { recursive: true });
  const tmp = await writableDepsDir(ctx, PYTHON_TMP_REL);
  // The org's stored wheels this lock names, read-only (python-wheels.ts); pip downloads the rest into wheels/.
  const stored: Bind = { host: join(ctx.depsDir, PYTHON_STORE_REL), at: `${DEPS_AT}/${PYTHON_STORE_REL}` };
  await ctx.packages?.seedWheels(ctx.treeDir, ws, stored.host);
  const seeded = ctx.packages !== undefined && (await isPlainDir(ctx.depsDir, PYTHON_STORE_REL));
  const index = new URL(ctx.pipIndexUrl);
  return {
    argv: [
      ctx.tools.python,
      '-I',
      '-B',
      PIP_DRIVER_AT,
      '--tree',
      TREE_AT,
      '--workspace',
      under(TREE_AT, ws),
      '--target',
      `${at}/${SITE_PACKAGES}`,
      '--report',
      `${at}/${REPORT}`,
      '--index-url',
      ctx.pipIndexUrl,
      '--wheels-out',
      `${tmp.at}/${WHEELS_OUT}`,
      ...(seeded ? ['--wheels-in', stored.at] : []),
      // pip ignores a plain-http index unless its host is trusted (127.0.0.1 always
      // is): an operator who configured an http mirror chose it.
      ...(index.protocol === 'http:' ? ['--trusted-host', index.host] : []),
    ],
    env: {
      PIP_CONFIG_FILE: '/dev/null',
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
      PIP_NO_INPUT: '1',
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONNOUSERSITE: '1',
      // Downloads and pip's staging dir: wheels can outgrow the jail's tmpfs.
      TMPDIR: tmp.at,
    },
    binds: [out, tmp, { host: DRIVER_HOST, at: PIP_DRIVER_AT }, ...(seeded ? [stored] : [])],
    tree: { hostDir: ctx.treeDir, at: TREE_AT },
    cwd: at,
  };
}

const reportSchema = z.object({
  skipped: z.array(z.string()).max(100_000),
  failed: z.array(z.string()).max(100_000).optional(),
});

/** What the driver skipped, from its report (written by the jail: bounded, validated, control characters removed). */
export async function pythonSkipped(ctx: Pick<StepContext, 'depsDir'>, ws: string): Promise<string[]> {
  const file = join(ctx.depsDir, wsRel('python', ws), REPORT);
  if (!(await isRegularFile(file))) return [];
  if ((await stat(file)).size > MAX_REPORT_BYTES) return ['(the report of skipped requirements was too large to read)'];
  try {
    const r = reportSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (!r.success) return [];
    // eslint-disable-next-line no-control-regex
    const clean = r.data.skipped.map((s) => s.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 300));
    return clean.length > MAX_SKIPPED ? [...clean.slice(0, MAX_SKIPPED), `… and ${clean.length - MAX_SKIPPED} more`] : clean;
  } catch {
    return [];
  }
}

export function pythonHint(output: string): string | undefined {
  // The driver's own conclusion first (pip-driver.py classify): it read pip's output whole.
  // Only its fixed sentences: the rest of the output is pip's, and pip echoes what the tree wrote.
  const failed = /^lspd: failed: (the index host [A-Za-z_ ()]+|a downloaded wheel does not match the hashes in the lock)$/m.exec(output)?.[1];
  if (failed) return `${failed}.`;
  if (/the lock could not be read/.test(output)) return 'the lock file could not be read.';
  return registryReason(output);
}

/** The site-packages of a done workspace, bound read-only at its fixed in-jail path. */
export async function pythonServeMounts(depsDir: string, ws: string): Promise<ServeMount[]> {
  const rel = `${wsRel('python', ws)}/${SITE_PACKAGES}`;
  return (await isPlainDir(depsDir, rel)) ? [{ host: join(depsDir, rel), at: `${DEPS_AT}/${rel}`, treeRel: false }] : [];
}
