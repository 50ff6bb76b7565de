// The one renderer of a failed zod validation into the API's error: a bad `org` or
// `repo` is 400 bad_name and a bad `sha` 400 bad_sha on every route, as PUT has
// always answered (API.md "Conventions"); anything else is 400 bad_request naming
// the field. Routes, tools, /mcp and /ask batches all validate through it.
import type { z } from 'zod';
import { errors, type AppError } from '../errors.js';

/** Fields whose refusal has a code of its own. */
const FIELD_ERRORS: Record<string, (message: string) => AppError> = {
  org: errors.badName,
  repo: errors.badName,
  sha: errors.badSha,
  // POST /v1/diff's two roots and PUT's ?base=: shas too.
  base: errors.badSha,
  head: errors.badSha,
};

export function describeZod(err: z.ZodError): string {
  const i = err.issues[0];
  if (!i) return 'Invalid request.';
  const where = i.path.length ? i.path.join('.') + ': ' : '';
  return `${where}${i.message}`.replace(/\.?$/, '.');
}

/** The API error for a failed validation. */
export function invalid(err: z.ZodError): AppError {
  const first = err.issues[0]?.path;
  const field = first?.length === 1 ? String(first[0]) : undefined;
  const make = (field !== undefined && FIELD_ERRORS[field]) || errors.badRequest;
  return make(describeZod(err));
}

/** Validate with a zod schema, throwing the API error for the first issue. */
export function validate<T extends z.ZodType>(schema: T, data: unknown): z.infer<T> {
  const r = schema.safeParse(data);
  if (!r.success) throw invalid(r.error);
  return r.data;
}
