// Python: wheels only, from the tree's lock, by pip-driver.py (../python.ts has the why).
import { preparePython, pythonHint, pythonServeMounts, pythonSkipped } from '../python.js';
import { PYTHON_STORE_REL, PYTHON_TMP_REL, wsRel } from '../step.js';
import { baseName, fetchIt, inside, refuse, type EcosystemRecord } from './record.js';

const LOCKS = new Set(['uv.lock', 'poetry.lock', 'Pipfile.lock', 'Pipfile', 'pyproject.toml', 'setup.py', 'setup.cfg']);
/**
 * A requirements file may include (`-r`, `-c`) any file of the tree by any name, so
 * every text-like requirement file anywhere counts: a docs .txt change costs a
 * Python reuse, never a stale one.
 */
const ANYWHERE = /\.(txt|in)$/;

const MARKERS = ['pyproject.toml', 'setup.py', 'setup.cfg', 'Pipfile'];
/** Python locks the fetcher reads (src/fetch/pip-driver.py), most exact first. */
const DETECT_LOCKS = ['uv.lock', 'poetry.lock', 'Pipfile.lock'];
const REQUIREMENTS = /^requirements[\w.-]*\.txt$/;
const NO_LOCK =
  'Python dependencies were not fetched: there is no lock file (requirements*.txt with pinned versions, uv.lock, poetry.lock or Pipfile.lock), and without one versions would be resolved at fetch time.';
const MISSING = 'Python dependencies were not fetched: no pinned python3 with pip (python3-pip) is installed.';

export const python: EcosystemRecord = {
  name: 'python',
  command: 'pip install',
  // The simple index, and where its wheel links point.
  defaultHosts: ['pypi.org:443', 'files.pythonhosted.org:443'],
  lockfiles: [...DETECT_LOCKS, REQUIREMENTS],
  detect: async ({ files }, tools) => {
    if (DETECT_LOCKS.some((m) => files.has(m)) || [...files].some((f) => REQUIREMENTS.test(f))) return tools.python && tools.pip ? fetchIt : refuse(MISSING);
    return MARKERS.some((m) => files.has(m)) ? refuse(NO_LOCK) : undefined;
  },
  outputDir: 'python',
  scratchDirs: [PYTHON_TMP_REL, PYTHON_STORE_REL],
  prepare: preparePython,
  hint: pythonHint,
  skipped: pythonSkipped,
  outputRel: (ws) => wsRel('python', ws),
  serveMounts: (_tree, depsDir, ws) => pythonServeMounts(depsDir, ws),
  readsInput: (path, ws) => (inside(path, ws) && LOCKS.has(baseName(path))) || ANYWHERE.test(baseName(path)),
};
