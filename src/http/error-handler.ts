// The one place where errors become HTTP answers. AppErrors render as declared in
// src/errors.ts; fastify's own errors (body too large, bad JSON, bad media type)
// map to their codes; anything else is a 500 whose message says nothing about the
// host. `Retry-After` accompanies every answer that carries `retry_after`.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, errors, isAppError } from '../errors.js';
import { invalid, validate } from '../api/validation.js';
import { dropRest } from './drop-body.js';

export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (err instanceof z.ZodError) return invalid(err);
  const fe = err as FastifyError;
  switch (fe?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.tooLarge('The request body is larger than allowed.', 'body');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType('Unsupported Content-Type for this route.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.badRequest('The body is not valid JSON.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('Content-Length does not match the body.');
  }
  if (fe instanceof SyntaxError) return errors.badRequest('The body is not valid JSON.');
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return errors.badRequest('The request could not be read.');
  }
  return errors.internal('Internal error.');
}

/** Validate with a zod schema (src/api/validation.ts: bad_name, bad_sha, else bad_request naming the field). */
export const parse = validate;

export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  const retry = err.extra.retry_after;
  if (typeof retry === 'number') reply.header('retry-after', String(Math.max(1, Math.ceil(retry))));
  return reply.code(err.status).type('application/json').send(err.toJSON());
}

/**
 * A body past the JSON limit is refused before it is read, and fastify closes the
 * connection after the 413: read (and drop) the rest first so the client gets its
 * 413, within a bound of bytes and time; past it the close stands.
 */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
const DRAIN_MAX_MS = 5_000;

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(async (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const appErr = toAppError(err);
    if (appErr.status >= 500 && appErr.code === 'internal') req.log.error({ reqId: req.id, err }, 'request failed');
    if ((err as FastifyError)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') await dropRest(req.raw, DRAIN_MAX_BYTES, DRAIN_MAX_MS);
    return sendError(reply, appErr);
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, errors.routeNotFound(`No route ${req.method} ${req.url.split('?')[0]}.`)));
}
