/**
 * The flush's statements: every buffered row in one INSERT and every counter increment in one
 * upsert, each a single parameter of JSON expanded by jsonb_to_recordset (as ingest does), so a
 * batch of any size is one statement, parsed once, with no bind-parameter limit.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';

/** One row of policy_decisions, as JSON (snake_case: jsonb_to_recordset matches names). */
export interface DecisionRow {
  organization_id: string;
  id: string;
  agent_id: string;
  action_type: string;
  action_name: string;
  action_resource: string | null;
  environment: string;
  decision: string;
  violations: unknown[];
  warnings: unknown[];
  policy_ids: string[];
  evaluated_policies: number;
  evaluation_ms: number;
  access_grant_id: string | null;
  session_id: string | null;
  trace_id: string | null;
  user_id: string | null;
  created_at: string;
}

/** One counter increment: per (organization, policy, agent, hour). */
export interface CounterRow {
  organization_id: string;
  policy_id: string;
  agent_id: string;
  hour: string;
  allow_count: number;
  deny_count: number;
  require_approval_count: number;
  warn_count: number;
}

const DECISION_COLUMNS = sql.raw(
  'organization_id uuid, id uuid, agent_id uuid, action_type text, action_name text, action_resource text, environment text, decision text, ' +
    'violations jsonb, warnings jsonb, policy_ids uuid[], evaluated_policies int, evaluation_ms float8, access_grant_id uuid, ' +
    'session_id text, trace_id text, user_id text, created_at timestamptz',
);
const DECISION_NAMES = sql.raw(
  'organization_id, id, agent_id, action_type, action_name, action_resource, environment, decision, violations, warnings, policy_ids, ' +
    'evaluated_policies, evaluation_ms, access_grant_id, session_id, trace_id, user_id, created_at',
);

/**
 * Text that PostgreSQL can store in jsonb: no NUL and no unpaired surrogate. Enforce inputs are
 * already refused with those, but a violation's message may quote a custom validator's answer.
 */
const storable = (_key: string, v: unknown) =>
  typeof v === 'string' && (v.includes('\u0000') || !v.isWellFormed()) ? v.replaceAll('\u0000', '').toWellFormed() : v;

// How JSON.stringify writes a NUL or an unpaired surrogate (a literal backslash before "u0000" also
// matches: that only sends the batch through the slower, exact path).
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** JSON text of rows, made storable: a plain stringify, redone with the cleaning replacer only when needed. */
export function rowsJson(rows: readonly object[]) {
  const text = JSON.stringify(rows);
  return UNSTORABLE_ESCAPE.test(text) ? JSON.stringify(rows, storable) : text;
}

/**
 * Inserts decision rows. A decision id already stored is skipped: a flush retried after a commit
 * whose answer was lost writes each row once.
 */
export async function insertDecisions(db: Executor, rows: readonly DecisionRow[]) {
  if (rows.length === 0) return;
  await db.execute(sql`insert into policy_decisions (${DECISION_NAMES})
    select ${DECISION_NAMES} from jsonb_to_recordset(${rowsJson(rows)}::jsonb) as r(${DECISION_COLUMNS})
    on conflict do nothing`);
}

/**
 * Adds counter increments (one row per key: the caller aggregates, since one statement may not
 * update a row twice). Rows come sorted by key, so two instances flushing overlapping keys lock
 * them in the same order and cannot deadlock.
 */
export async function addCounts(db: Executor, rows: readonly CounterRow[]) {
  if (rows.length === 0) return;
  await db.execute(sql`insert into policy_decision_counts as c
      (organization_id, policy_id, agent_id, hour, allow_count, deny_count, require_approval_count, warn_count)
    select organization_id, policy_id, agent_id, hour, allow_count, deny_count, require_approval_count, warn_count
      from jsonb_to_recordset(${rowsJson(rows)}::jsonb)
        as r(organization_id uuid, policy_id uuid, agent_id uuid, hour timestamptz, allow_count int, deny_count int, require_approval_count int, warn_count int)
    on conflict (organization_id, policy_id, agent_id, hour) do update set
      allow_count = c.allow_count + excluded.allow_count,
      deny_count = c.deny_count + excluded.deny_count,
      require_approval_count = c.require_approval_count + excluded.require_approval_count,
      warn_count = c.warn_count + excluded.warn_count`);
}
