/** The SQL of the job lifecycle: claim, complete, fail, release, and dead leases. */
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db/client.js';

export interface ClaimedRow {
  organization_id: string;
  id: string;
  type: string;
  payload: unknown;
  attempts: number;
  max_attempts: number;
  /** When the job became due (or its previous lease ended). */
  due_at: string | Date;
}

/** `a, b, c` as bound parameters, for `in (…)`. */
export const sqlList = (values: string[]) => sql.join(values.map((v) => sql`${v}`), sql`, `);

/**
 * Claims up to `limit` due jobs of `types` for `runnerId` until `leaseEnd`. FOR UPDATE SKIP LOCKED lets
 * runners on several instances claim at once without waiting on or double-claiming each other's rows.
 */
export async function claimDue(db: Db, types: string[], limit: number, runnerId: string, now: Date, leaseEnd: Date): Promise<ClaimedRow[]> {
  if (types.length === 0 || limit <= 0) return [];
  const result = await db.execute(sql`
    with due as (
      select organization_id, id, run_at from jobs
      where status in ('pending', 'running') and run_at <= ${now.toISOString()}::timestamptz
        and attempts < max_attempts and type in (${sqlList(types)})
      order by run_at
      limit ${limit}
      for update skip locked
    )
    update jobs j set status = 'running', attempts = j.attempts + 1, locked_by = ${runnerId},
      run_at = ${leaseEnd.toISOString()}::timestamptz, updated_at = ${now.toISOString()}::timestamptz
    from due where j.organization_id = due.organization_id and j.id = due.id
    returning j.organization_id, j.id, j.type, j.payload, j.attempts, j.max_attempts, due.run_at as due_at`);
  return rowsOf<ClaimedRow>(result);
}

/** Deletes a finished job, unless its lease passed to another runner meanwhile. */
export async function completeJob(db: Db, organizationId: string, id: string, runnerId: string) {
  await db.execute(sql`delete from jobs where organization_id = ${organizationId}::uuid and id = ${id}::uuid and locked_by = ${runnerId}`);
}

/** Records a failure: pending again at `retryAt`, or dead (kept, with the error) when attempts are spent. */
export async function failJob(db: Db, organizationId: string, id: string, runnerId: string, error: string, now: Date, retryAt: Date) {
  const result = await db.execute(sql`
    update jobs set status = case when attempts >= max_attempts then 'dead' else 'pending' end,
      run_at = case when attempts >= max_attempts then run_at else ${retryAt.toISOString()}::timestamptz end,
      locked_by = null, last_error = ${error}, updated_at = ${now.toISOString()}::timestamptz
    where organization_id = ${organizationId}::uuid and id = ${id}::uuid and locked_by = ${runnerId} and status = 'running'
    returning status`);
  return rowsOf<{ status: string }>(result)[0]?.status as 'pending' | 'dead' | undefined;
}

/** Marks dead the running jobs (of `types`) whose lease ended with no attempt left (their worker died on the last try). */
export async function buryExpiredLeases(db: Db, types: string[], now: Date) {
  if (types.length === 0) return [];
  const result = await db.execute(sql`
    update jobs set status = 'dead', locked_by = null, updated_at = ${now.toISOString()}::timestamptz,
      last_error = coalesce(last_error || '; ', '') || 'lease expired on the last attempt (worker stopped or timed out)'
    where status = 'running' and run_at <= ${now.toISOString()}::timestamptz and attempts >= max_attempts
      and type in (${sqlList(types)})
    returning organization_id, id, type`);
  return rowsOf<{ organization_id: string; id: string; type: string }>(result);
}

/** Hands this runner's claims back (shutdown): due now, and the interrupted attempt is not counted. */
export async function releaseClaims(db: Db, runnerId: string, now: Date) {
  await db.execute(sql`
    update jobs set status = 'pending', locked_by = null, attempts = greatest(attempts - 1, 0),
      run_at = ${now.toISOString()}::timestamptz, updated_at = ${now.toISOString()}::timestamptz
    where locked_by = ${runnerId} and status = 'running'`);
}

/** Counts by type and status, with the oldest due pending job per type. */
export async function queueDepth(db: Db, now: Date) {
  const result = await db.execute(sql`
    select type, status, count(*)::int as count,
      min(run_at) filter (where status = 'pending' and run_at <= ${now.toISOString()}::timestamptz) as oldest_due
    from jobs group by type, status order by type, status`);
  return rowsOf<{ type: string; status: string; count: number; oldest_due: string | Date | null }>(result);
}

export interface DeadJob {
  organizationId: string;
  id: string;
  type: string;
  payload: unknown;
  attempts: number;
  lastError: string | null;
  diedAt: Date;
}

/** Dead jobs, newest first (optionally of one organization or type): kept with their last error for an operator to see. */
export async function listDeadJobs(db: Db, filter: { organizationId?: string; type?: string; limit?: number } = {}): Promise<DeadJob[]> {
  const rows = rowsOf<{ organization_id: string; id: string; type: string; payload: unknown; attempts: number; last_error: string | null; updated_at: string | Date }>(
    await db.execute(sql`
      select organization_id, id, type, payload, attempts, last_error, updated_at from jobs
      where status = 'dead'
        ${filter.organizationId ? sql`and organization_id = ${filter.organizationId}::uuid` : sql``}
        ${filter.type ? sql`and type = ${filter.type}` : sql``}
      order by updated_at desc limit ${filter.limit ?? 100}`),
  );
  return rows.map((r) => ({
    organizationId: r.organization_id,
    id: r.id,
    type: r.type,
    payload: r.payload,
    attempts: r.attempts,
    lastError: r.last_error,
    diedAt: new Date(r.updated_at),
  }));
}
