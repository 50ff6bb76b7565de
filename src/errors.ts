// Every error a caller can see is declared here once: its code, its HTTP status,
// and the extra fields it carries. Failing code throws one of these; the single
// error handler in src/http/error-handler.ts renders them. Messages are one
// sentence and never contain host paths.

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly extra: Record<string, unknown>;
  constructor(code: string, status: number, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = status;
    this.extra = extra;
  }
  toJSON(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

const def =
  (code: string, status: number) =>
  (message: string, extra: Record<string, unknown> = {}) =>
    new AppError(code, status, message, extra);

/** The table of every error code lspd answers with. */
export const errors = {
  badRequest: def('bad_request', 400),
  badSha: def('bad_sha', 400),
  badName: def('bad_name', 400),
  badArchive: def('bad_archive', 400),
  /** The client hung up (or the daemon is stopping) before the upload was complete; usually nobody reads this answer. */
  uploadAborted: (message = 'The upload was interrupted before the archive was complete.') => new AppError('upload_aborted', 400, message),
  unsupportedMediaType: def('unsupported_media_type', 415),
  unauthorized: def('unauthorized', 401),
  forbidden: def('forbidden', 403),
  notFound: (message = 'No such root.') => new AppError('not_found', 404, message, { need: 'tree' }),
  routeNotFound: def('no_such_route', 404),
  needTree: (message = 'The root has not been uploaded; upload its tree and retry.', extra: Record<string, unknown> = {}) =>
    new AppError('need_tree', 409, message, { need: 'tree', ...extra }),
  /** The stored tree is not the git tree the upload said it is (x-lspd-git-tree). */
  treeMismatch: (expected: string, computed: string, message = 'The uploaded tree is not the git tree x-lspd-git-tree names; nothing was stored.') =>
    new AppError('tree_mismatch', 422, message, { expected, computed }),
  conflict: def('conflict', 409),
  unsafeEntry: (entry: string, reason: string) =>
    new AppError('unsafe_entry', 422, `Refused tar entry ${JSON.stringify(entry)}: ${reason}.`, { entry, reason }),
  tooLarge: (message: string, limit: string) => new AppError('too_large', 413, message, { limit }),
  noSuchFile: def('no_such_file', 404),
  fileTooLarge: def('file_too_large', 413),
  notUtf8: def('not_utf8', 415),
  noServer: def('no_server', 422),
  cannotRename: def('cannot_rename', 422),
  notFoundSymbol: def('symbol_not_found', 404),
  notReady: def('not_ready', 503),
  serverUnavailable: (message: string, retryAfterS: number) => new AppError('server_unavailable', 503, message, { retry_after: retryAfterS }),
  busy: (message: string, retryAfterS: number) => new AppError('busy', 503, message, { retry_after: retryAfterS }),
  insufficientStorage: def('insufficient_storage', 507),
  timeout: def('timeout', 504),
  shuttingDown: def('shutting_down', 503),
  internal: def('internal', 500),
} as const;

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
