/** Reading database errors, whichever driver raised them. */

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

/** unique_violation: a row with the same key exists. */
export const isUniqueViolation = (err: unknown) => sqlStateOf(err) === '23505';

/** Class 22 (data exception): a value the column cannot hold. */
export const isDataException = (err: unknown) => sqlStateOf(err)?.startsWith('22') ?? false;

/** A deadlock or serialization failure: the whole transaction may be retried. */
export const isRetryableConflict = (err: unknown) => {
  const s = sqlStateOf(err);
  return s === '40P01' || s === '40001';
};

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
