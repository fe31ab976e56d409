/**
 * The one error handler that maps everything to the `{ error: { code, message, fields? } }` body:
 * domain errors (src/core/errors.ts) by their code, through one status table. No stack or SQL
 * ever reaches a client.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { DomainError, type ErrorCode } from '../core/errors.js';
import { constraintOf, isDataException, isUniqueViolation, sqlStateOf } from '../core/db-errors.js';

// The one place a domain error code becomes an HTTP status.
const STATUS_OF: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  CONFLICT: 409,
  INVALID_TRANSITION: 409,
  FORBIDDEN: 403,
  UNAUTHORIZED: 401,
  VALIDATION_ERROR: 422,
  RATE_LIMITED: 429,
};

/** The HTTP status of a domain error (500 for a code the table does not know: a programming error). */
export const statusOf = (err: DomainError) => STATUS_OF[err.code as ErrorCode] ?? 500;

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: { maximum?: unknown; minimum?: unknown; origin?: string };
}

/**
 * zod's `int()` adds its own safe-integer bound: for `limit=99999999999999999999` it would say
 * "<= 9007199254740991" beside the route's "<= 100". The route's own bound is the one to speak
 * (docs/decisions.md "Strict inputs"), so the safe-integer issue counts only when it is alone.
 */
const isSafeIntegerBound = (v: ValidationIssue) =>
  v.params?.origin === 'int' &&
  ((v.keyword === 'too_big' && v.params.maximum === Number.MAX_SAFE_INTEGER) ||
    (v.keyword === 'too_small' && v.params.minimum === Number.MIN_SAFE_INTEGER));

/**
 * Turns zod issues into `{ "a.b.0": "message" }` using the input's own field names. A problem with
 * the whole input is named after the part: `body` or `query`, never an empty or made-up key.
 */
export function fieldsFrom(issues: ValidationIssue[], part: string | undefined): Record<string, string> {
  const fields: Record<string, string> = {};
  const whole = part === 'querystring' ? 'query' : (part ?? 'body');
  const ordered = [...issues.filter((v) => !isSafeIntegerBound(v)), ...issues.filter(isSafeIntegerBound)];
  for (const v of ordered) {
    const key = (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || whole;
    // Own keys only: a field named like an Object.prototype member (`valueOf`) must still be reported.
    if (!Object.hasOwn(fields, key)) fields[key] = v.message ?? 'Invalid value';
  }
  return fields;
}

/** The methods the router serves for a URL (none when the path is unknown), HEAD with GET. */
function allowedMethods(app: FastifyInstance, url: string): string[] {
  return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((method) => app.findRoute({ method, url }) !== null);
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
    // A known path with another method: 405 with the methods it has (RFC 9110 §15.5.6).
    const allow = allowedMethods(app, request.url.split('?')[0]);
    if (allow.length > 0) {
      reply.header('Allow', allow.join(', '));
      return reply.code(405).send({
        error: { code: 'METHOD_NOT_ALLOWED', message: `Method ${request.method} not allowed; use ${allow.join(', ')}` },
      });
    }
    reply.code(404).send({ error: { code: 'NOT_FOUND', message: `Route ${request.method} ${request.url.split('?')[0]} not found` } });
  });

  app.setErrorHandler((err: FastifyError & { code?: string; validationContext?: string }, request, reply) => {
    // The handler may have set another type (an export's text/csv) before failing: the error body is
    // JSON whatever it was, or Fastify refuses to serialize it and sends its own 500 body instead.
    reply.type('application/json; charset=utf-8');
    reply.removeHeader('content-disposition');
    const domainError: unknown = err;
    if (domainError instanceof DomainError) {
      const status = statusOf(domainError);
      if (status === 500) {
        request.log.error({ err }, 'domain error with an unmapped code');
        return reply.code(500).send({ error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
      }
      const { headers, code, message, fields } = domainError;
      if (headers) reply.headers(headers);
      return reply.code(status).send({ error: { code, message, ...(fields ? { fields } : {}) } });
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      // A malformed path id cannot name anything that exists: 404, as contract.md says.
      if (err.validationContext === 'params') {
        return reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'Resource not found' } });
      }
      return reply.code(422).send({
        error: { code: 'VALIDATION_ERROR', message: 'Request validation failed', fields: fieldsFrom(err.validation as ValidationIssue[], err.validationContext) },
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
    if (isUniqueViolation(err)) {
      // A service should have answered its own 409: whatever reaches this net is a missed case
      // (or a broken key) and is logged, without the error itself (its message holds parameters).
      request.log.warn({ sqlState: sqlStateOf(err), ...constraintOf(err) }, 'unique violation reached the error handler');
      return reply.code(409).send({ error: { code: 'CONFLICT', message: 'Conflicts with an existing resource' } });
    }
    if (isDataException(err)) {
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
