/**
 * Typed errors thrown by services, and the one error handler that maps everything to the
 * `{ error: { code, message, fields? } }` body. No stack or SQL ever reaches a client.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const notFound = (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found`);
export const conflict = (message: string, code = 'CONFLICT') => new AppError(409, code, message);
export const forbidden = (message = 'Insufficient permissions') => new AppError(403, 'FORBIDDEN', message);
export const unauthorized = (message = 'Missing or invalid credentials') => new AppError(401, 'UNAUTHORIZED', message);
export const validation = (fields: Record<string, string>, message = 'Request validation failed') =>
  new AppError(422, 'VALIDATION_ERROR', message, fields);

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: { issue?: { path?: PropertyKey[]; message?: string } };
}

/** Turns zod issues into `{ "a.b.0": "message" }` using the input's own field names. */
function fieldsFrom(issues: ValidationIssue[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const v of issues) {
    const path = v.params?.issue?.path;
    const key =
      path && path.length > 0
        ? path.map(String).join('.')
        : (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || '_';
    fields[key] ??= v.params?.issue?.message ?? v.message ?? 'Invalid value';
  }
  return fields;
}

// Postgres error classes that can only come from a value we should have rejected earlier:
// a safety net, so a gap in validation is still a 4xx and never a 500.
const PG_CONFLICT = new Set(['23505']);
const PG_BAD_VALUE_CLASS = '22';
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * The SQLSTATE of a database error, or undefined. Drizzle wraps driver errors (pg's DatabaseError,
 * PGlite's) in DrizzleQueryError with the original as `cause`, so the chain is followed.
 */
export function sqlStateOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SQLSTATE.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The constraint (and table) a database error names, following the same cause chain; never the
 * query, its parameters or the detail text, which carry request data.
 */
export function constraintOf(err: unknown): { constraint?: string; table?: string } {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const { constraint, table } = e as { constraint?: unknown; table?: unknown };
    if (typeof constraint === 'string') return { constraint, ...(typeof table === 'string' ? { table } : {}) };
    e = (e as { cause?: unknown }).cause;
  }
  return {};
}

/**
 * Fastify's `frameworkErrors` option: errors raised by the router before any route or hook runs.
 * A path that does not percent-decode (FST_ERR_BAD_URL) or has a segment longer than
 * `maxParamLength` (FST_ERR_MAX_PARAM_LENGTH) cannot name an existing resource: 404 NOT_FOUND, in the
 * one error body, instead of Fastify's own `{ error, code, message, statusCode }` with 400/414.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('X-Request-Id', request.id);
  if (err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'Resource not found' } });
  }
  request.log.error({ err }, 'router error');
  return reply.code(500).send({ error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
}

/** Registers the error and not-found handlers on an app. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: { code: 'NOT_FOUND', message: `Route ${request.method} ${request.url.split('?')[0]} not found` } });
  });

  app.setErrorHandler((err: FastifyError & { code?: string; validationContext?: string }, request, reply) => {
    // The handler may have set another type (an export's text/csv) before failing: the error body is
    // JSON whatever it was, or Fastify refuses to serialize it and sends its own 500 body instead.
    reply.type('application/json; charset=utf-8');
    reply.removeHeader('content-disposition');
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return reply
        .code(err.statusCode)
        .send({ error: { code: err.code, message: err.message, ...(err.fields ? { fields: err.fields } : {}) } });
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      // A malformed path id cannot name anything that exists: 404, as contract.md says.
      if (err.validationContext === 'params') {
        return reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'Resource not found' } });
      }
      return reply.code(422).send({
        error: { code: 'VALIDATION_ERROR', message: 'Request validation failed', fields: fieldsFrom(err.validation as ValidationIssue[]) },
      });
    }
    if (isResponseSerializationError(err)) {
      request.log.error({ err, issues: err.cause?.issues }, 'response does not match its schema');
      return reply.code(500).send({ error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
    }
    switch (err.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return reply.code(400).send({ error: { code: 'BAD_REQUEST', message: 'Malformed JSON body' } });
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply.code(413).send({ error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large' } });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply
          .code(415)
          .send({ error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Send JSON with Content-Type: application/json' } });
    }
    const state = sqlStateOf(err);
    if (state && PG_CONFLICT.has(state)) {
      // A service should have answered its own 409: whatever reaches this net is a missed case
      // (or a broken key) and is logged, without the error itself (its message holds parameters).
      request.log.warn({ sqlState: state, ...constraintOf(err) }, 'unique violation reached the error handler');
      return reply.code(409).send({ error: { code: 'CONFLICT', message: 'Conflicts with an existing resource' } });
    }
    if (state && state.startsWith(PG_BAD_VALUE_CLASS)) {
      request.log.warn({ err }, 'database rejected a value that validation let through');
      return reply.code(422).send({ error: { code: 'VALIDATION_ERROR', message: 'A value is out of range', fields: {} } });
    }
    // Fastify's own client errors (e.g. SyntaxError from the JSON parser) keep their 4xx.
    const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ error: { code: status === 400 ? 'BAD_REQUEST' : 'CLIENT_ERROR', message: err.message } });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
  });
}
