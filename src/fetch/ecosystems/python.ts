// Python: wheels only, from the tree's lock, by pip-driver.py (../python.ts has the why).
import { preparePython, pythonHint, pythonServeMounts, pythonSkipped } from '../python.js';
import { wsRel } from '../step.js';
import { baseName, inside, type EcosystemRecord } from './record.js';

const LOCKS = new Set(['uv.lock', 'poetry.lock', 'Pipfile.lock', 'Pipfile', 'pyproject.toml', 'setup.py', 'setup.cfg']);
/**
 * A requirements file may include (`-r`, `-c`) any file of the tree by any name, so
 * every text-like requirement file anywhere counts: a docs .txt change costs a
 * Python reuse, never a stale one.
 */
const ANYWHERE = /\.(txt|in)$/;

export const python: EcosystemRecord = {
  name: 'python',
  command: 'pip install',
  // The simple index, and where its wheel links point.
  defaultHosts: ['pypi.org:443', 'files.pythonhosted.org:443'],
  lockfiles: ['uv.lock', 'poetry.lock', 'Pipfile.lock', /^requirements[\w.-]*\.txt$/],
  prepare: preparePython,
  hint: pythonHint,
  skipped: pythonSkipped,
  outputRel: (ws) => wsRel('python', ws),
  serveMounts: (_tree, depsDir, ws) => pythonServeMounts(depsDir, ws),
  readsInput: (path, ws) => (inside(path, ws) && LOCKS.has(baseName(path))) || ANYWHERE.test(baseName(path)),
};
