/** Trace retention: deleting traces older than a cutoff, in bounded batches (docs/decisions.md, "Trace retention"). */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { rowsOf } from '../../db/client.js';
import { organizationIds } from '../organizations/index.js';

const DAY_MS = 86_400_000;

/** The cutoff for a retention of `days` at `now`: traces timestamped before it expire; null when retention is off (0). */
export function traceRetentionCutoff(days: number, now: Date): Date | null {
  return days > 0 ? new Date(now.getTime() - days * DAY_MS) : null;
}

export interface DeleteExpiredOptions {
  /** Traces whose `timestamp` is before this instant are deleted. */
  before: Date;
  /** Rows per DELETE statement: bounds each statement's locks, WAL burst and duration. */
  batchSize?: number;
  /** DELETE statements per run at most; the rest waits for the next run. */
  maxBatches?: number;
}

/**
 * Deletes traces timestamped before `before`, organization by organization, `batchSize` rows per
 * statement, until none is left or `maxBatches` statements ran. Answers how many were deleted and
 * whether some may remain (the cap was reached). Each statement names one organization, so it
 * reads the (organization_id, timestamp) index and, under Citus, runs on one shard.
 */
export async function deleteExpiredTraces(db: Executor, opts: DeleteExpiredOptions): Promise<{ deleted: number; more: boolean }> {
  const batchSize = opts.batchSize ?? 1000;
  const maxBatches = opts.maxBatches ?? 1000;
  const before = opts.before.toISOString();
  const orgs = await organizationIds(db);
  let deleted = 0;
  let batches = 0;
  for (const orgId of orgs) {
    for (;;) {
      if (batches >= maxBatches) return { deleted, more: true };
      batches++;
      const [{ n }] = rowsOf<{ n: number }>(
        await db.execute(sql`
          with doomed as (
            select id from traces
             where organization_id = ${orgId} and "timestamp" < ${before}::timestamptz
             limit ${batchSize}
          ), gone as (
            delete from traces t using doomed
             where t.organization_id = ${orgId} and t.id = doomed.id
            returning 1
          )
          select count(*)::int as n from gone`),
      );
      deleted += Number(n);
      if (Number(n) < batchSize) break;
    }
  }
  return { deleted, more: false };
}
