// A root's fetch state on disk: <deps>/fetch.json, the daemon's alone (no jail
// binds it). Written to a temporary name and renamed, so a crash leaves the old
// file or the new one, never half of one; read back at start to resume.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isSafeRelDir } from './ecosystems.js';
import { STATE_FILE } from './step.js';
import type { FetchView } from './types.js';

/** What is persisted: the view plus what resuming needs. */
export interface StateFile {
  v: 1;
  view: FetchView;
  /** How many runs began; resuming a crash-interrupted job counts one more. */
  attempt: number;
}

const states = new Set(['none', 'queued', 'running', 'done', 'partial', 'failed', 'refused']);

export async function writeStateFile(depsDir: string, file: StateFile): Promise<void> {
  const path = join(depsDir, STATE_FILE);
  await writeFile(`${path}.tmp`, JSON.stringify(file));
  await rename(`${path}.tmp`, path);
}

/** The state file, or undefined when absent or not one lspd wrote (then the root is detected anew). */
export async function readStateFile(depsDir: string): Promise<StateFile | undefined> {
  try {
    const f = JSON.parse(await readFile(join(depsDir, STATE_FILE), 'utf8')) as StateFile;
    if (f.v !== 1 || !states.has(f.view?.state) || typeof f.attempt !== 'number') return undefined;
    // Workspace dirs are joined under host dirs when a job resumes: re-check them.
    if (!Array.isArray(f.view.ecosystems ?? []) || (f.view.ecosystems ?? []).some((s) => typeof s.dir !== 'string' || !isSafeRelDir(s.dir))) return undefined;
    return f;
  } catch {
    return undefined;
  }
}
