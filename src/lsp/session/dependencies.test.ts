import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FetchView } from '../../fetch/types.js';
import type { ServerRow } from '../servers/server-row.js';
import { dependencyNote, fetchedEcosystems, fetchingFor, type DependencySource } from './dependencies.js';

const key = { org: 'acme', repo: 'mono', sha: 'a'.repeat(40) };
const src = (view: FetchView): DependencySource => ({
  state: () => view,
  peek: () => view,
  wait: () => Promise.resolve(view),
  serveBinds: () => [],
  serveEnv: () => ({}),
  onDone: () => () => undefined,
});
const npmRow = { ecosystem: 'npm' } as ServerRow;
const pyRow = { ecosystem: 'python' } as ServerRow;

describe('dependencies per workspace', () => {
  it('an ecosystem with one workspace fetched and one failed is partial, naming the failed one; another ecosystem says its own', () => {
    const view: FetchView = {
      state: 'partial',
      ecosystems: [
        { ecosystem: 'npm', dir: '', state: 'done' },
        { ecosystem: 'npm', dir: 'web', state: 'failed', reason: 'the registry host is not an allowed registry.' },
        { ecosystem: 'python', dir: 'utils/doclint', state: 'failed', reason: 'the index host could not be reached.' },
      ],
    };
    assert.deepEqual(dependencyNote(src(view), key, npmRow), { state: 'partial', error: 'web: the registry host is not an allowed registry.' });
    assert.deepEqual(dependencyNote(src(view), key, pyRow), { state: 'failed', error: 'the index host could not be reached.' });
  });

  it('workspaces linked from an earlier root are not waited for, and their sessions are not restarted again at the end', () => {
    const running: FetchView = {
      state: 'running',
      ecosystems: [
        { ecosystem: 'npm', dir: '', state: 'done', reused: 'b'.repeat(40) },
        { ecosystem: 'python', dir: 'utils/doclint', state: 'running' },
      ],
    };
    assert.equal(fetchingFor(running, npmRow), false);
    assert.equal(fetchingFor(running, pyRow), true);
    assert.deepEqual(dependencyNote(src(running), key, npmRow), { state: 'done' });
    const done: FetchView = {
      ...running,
      state: 'partial',
      ecosystems: [running.ecosystems![0]!, { ecosystem: 'python', dir: 'utils/doclint', state: 'failed' }],
    };
    assert.deepEqual([...fetchedEcosystems(done)], ['python']);
  });
});
