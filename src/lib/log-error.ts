/**
 * The pino serializer for errors: what an operator needs to find a failure (type, SQLSTATE,
 * constraint, table, a short message, stack frames), never the data the failing request carried.
 *
 * Drizzle's DrizzleQueryError puts the SQL text and every bound parameter into its message and
 * keeps them as `query`/`params`; PostgreSQL's `detail` and `where` can quote row values ("Key
 * (trace_id)=(…) already exists"). A failed ingest would otherwise log the whole batch: prompts,
 * outputs, emails (docs/decisions.md, "Security hardening").
 */

const MAX_MESSAGE = 200;
const MAX_CAUSES = 5;

export interface SerializedError {
  [key: string]: unknown;
  type: string;
  message: string;
  /** Stack frames only ('' when there are none). */
  stack: string;
  code?: string;
  constraint?: string;
  table?: string;
  column?: string;
  cause?: SerializedError;
}

type ErrorLike = Error & {
  code?: unknown;
  constraint?: unknown;
  table?: unknown;
  column?: unknown;
  query?: unknown;
  params?: unknown;
  cause?: unknown;
};

/** A SQLSTATE is five characters of digits and upper-case letters. */
const isSqlState = (v: unknown): v is string => typeof v === 'string' && /^[0-9A-Z]{5}$/.test(v);

/** Only the "at …" frames: a stack's first lines repeat the message, which may hold parameters. */
function framesOf(stack: unknown): string | undefined {
  if (typeof stack !== 'string') return undefined;
  const frames = stack.split('\n').filter((l) => /^\s+at /.test(l));
  return frames.length > 0 ? frames.join('\n') : undefined;
}

function messageOf(e: ErrorLike): string {
  // The SQL and its parameters are the whole message of a failed drizzle query.
  if ('query' in e || 'params' in e) return 'Failed query';
  const m = typeof e.message === 'string' ? e.message : String(e);
  // A database message may quote the offending value after a colon
  // ('invalid input syntax for type uuid: "…"'); the text before it names the problem.
  const short = isSqlState(e.code) && m.includes(': ') ? m.slice(0, m.indexOf(': ')) : m;
  return short.length > MAX_MESSAGE ? `${short.slice(0, MAX_MESSAGE)}…` : short;
}

function serializeOne(e: ErrorLike, depth: number): SerializedError {
  const out: SerializedError = { type: e.constructor?.name ?? 'Error', message: messageOf(e), stack: framesOf(e.stack) ?? '' };
  if (typeof e.code === 'string') out.code = e.code;
  if (typeof e.constraint === 'string') out.constraint = e.constraint;
  if (typeof e.table === 'string') out.table = e.table;
  if (typeof e.column === 'string') out.column = e.column;
  if (e.cause instanceof Error && depth < MAX_CAUSES) out.cause = serializeOne(e.cause as ErrorLike, depth + 1);
  return out;
}

/** Serializes an error for the logs without query text, parameters or row values (any `cause` chain included). */
export function serializeError(err: Error): SerializedError {
  // pino hands over whatever was logged under `err`; a thrown non-Error is described, not dumped.
  if (!(err instanceof Error)) return { type: typeof err, message: 'non-Error value thrown', stack: '' };
  const out = serializeOne(err as ErrorLike, 0);
  // Drizzle's wrapper has no code of its own: lift the database's SQLSTATE to the top for searching.
  for (let c = out.cause; !out.code && c; c = c.cause) if (c.code && isSqlState(c.code)) out.code = c.code;
  return out;
}
