// Reading a stored root's files: GET /v1/roots/{org}/{repo}/{sha}/files/{path} and the
// read_file tool. Admitted like every service (src/tenancy/admission.ts ops.read: no jail is
// needed; the org's share of LSPD_MAX_FILE_READS; a root not stored is 404 as GET on
// it answers); what a read may touch is src/lsp/answer/file-read.ts.
import { ops, type Admission } from '../tenancy/admission.js';
import type { Config } from '../config.js';
import { errors } from '../errors.js';
import type { FetchManager } from '../fetch/fetch-manager.js';
import { TREE_AT } from '../jail/layout.js';
import { readFileRange } from '../lsp/answer/file-read.js';
import type { FileAnswer } from '../api/responses.js';
import type { ReadFileArgs } from '../api/schemas.js';
import type { RootKey } from '../store/types.js';

export interface FileServiceDeps {
  config: Pick<Config, 'maxAnswerBytes' | 'maxFileBytes'>;
  admission: Pick<Admission, 'admit' | 'reads'>;
  store: { treeDir(key: RootKey): string; depsDir(key: RootKey): string };
  /** What SERVE binds for a root: a deps read lands only in these. */
  fetcher: Pick<FetchManager, 'serveBinds'>;
}

export class FileService {
  readonly #d: FileServiceDeps;

  constructor(d: FileServiceDeps) {
    this.#d = d;
  }

  /** Lines of a file of a stored root, for validated arguments. */
  async read(a: ReadFileArgs): Promise<FileAnswer> {
    // A request that could never be answered is refused before it takes a slot.
    if (a.end !== undefined && a.start !== undefined && a.end < a.start) throw errors.badRequest('end must not be less than start.');
    const { admission, store, fetcher, config } = this.#d;
    admission.admit(a, ops.read); // ops.read marks the root used in the look-up that admits it
    try {
      const dirs = { treeHostDir: store.treeDir(a), depsHostDir: store.depsDir(a), mounts: fetcher.serveBinds(a, TREE_AT) };
      return await readFileRange(dirs, {
        path: a.path,
        from: a.from,
        start: a.start ?? 0,
        ...(a.end !== undefined ? { end: a.end } : {}),
        maxAnswerBytes: config.maxAnswerBytes,
        maxFileBytes: config.maxFileBytes,
      });
    } finally {
      admission.reads.give(a.org);
    }
  }
}
