/** Recurring schedules that run once per period across every instance. */
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db/client.js';
import { enqueue } from './enqueue.js';
import { sqlList } from './store.js';

/** Creates the schedule row, or updates its period (keeping when it is next due). */
export async function upsertSchedule(db: Db, name: string, everyMs: number, now: Date) {
  await db.execute(sql`
    insert into job_schedules (name, every_ms, next_run_at) values (${name}, ${everyMs}, ${now.toISOString()}::timestamptz)
    on conflict (name) do update set every_ms = excluded.every_ms`);
}

/**
 * Claims every due schedule among `names` and enqueues its job in the same transaction. The claim is one
 * atomic UPDATE ... WHERE next_run_at <= now RETURNING: of several instances, exactly one moves a row
 * forward (the others wait on its row lock, then find it no longer due), so each period runs once.
 */
export async function fireDueSchedules(db: Db, schedules: ReadonlyMap<string, { type: string }>, runnerId: string, now: Date): Promise<string[]> {
  if (schedules.size === 0) return [];
  const names = sqlList([...schedules.keys()]);
  return db.transaction(async (tx) => {
    const claimed = rowsOf<{ name: string; period: string | Date }>(
      await tx.execute(sql`
        update job_schedules s set next_run_at = ${now.toISOString()}::timestamptz + make_interval(secs => s.every_ms / 1000.0),
          last_run_at = ${now.toISOString()}::timestamptz, last_run_by = ${runnerId}
        from (select name, next_run_at from job_schedules where name in (${names}) and next_run_at <= ${now.toISOString()}::timestamptz for update) due
        where s.name = due.name
        returning s.name, due.next_run_at as period`),
    );
    for (const row of claimed) {
      const period = new Date(row.period).toISOString();
      await enqueue(tx, { type: schedules.get(row.name)!.type, payload: { schedule: row.name, period }, idempotencyKey: `${row.name}@${period}` }, now);
    }
    return claimed.map((r) => r.name);
  });
}
