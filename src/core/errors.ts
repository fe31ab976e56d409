/**
 * Domain errors: a stable `code`, a message, and optionally the offending fields or response
 * headers. They know nothing of HTTP: src/http/errors.ts maps each code to a status in one table.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly fields?: Record<string, string>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/** The codes services throw; the HTTP layer has exactly one status for each. */
const ERROR_CODES = [
  'NOT_FOUND',
  'CONFLICT',
  'INVALID_TRANSITION',
  'FORBIDDEN',
  'UNAUTHORIZED',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A named resource does not exist (or is not visible to the caller). */
export const notFound = (what = 'Resource') => new DomainError('NOT_FOUND', `${what} not found`);
/** The change collides with existing state (a taken name, a duplicate membership). */
export const conflict = (message: string) => new DomainError('CONFLICT', message);
/** A lifecycle change that the resource's current state does not allow. */
export const invalidTransition = (message: string) => new DomainError('INVALID_TRANSITION', message);
/** The caller is known but may not do this. */
export const forbidden = (message = 'Insufficient permissions') => new DomainError('FORBIDDEN', message);
/** The caller is not known: missing or invalid credentials. */
export const unauthorized = (message = 'Missing or invalid credentials') => new DomainError('UNAUTHORIZED', message);
/** Input that is well-formed but not acceptable, by field. */
export const validation = (fields: Record<string, string>, message = 'Request validation failed') =>
  new DomainError('VALIDATION_ERROR', message, fields);
/** Too many requests in the window; `retryAfterSeconds` tells the caller when to come back. */
export const rateLimited = (message: string, retryAfterSeconds: number) =>
  new DomainError('RATE_LIMITED', message, undefined, { 'Retry-After': String(retryAfterSeconds) });
