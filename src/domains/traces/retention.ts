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
 * Deletes traces timestamped before `before`, organization by organization (only those that have
 * some), `batchSize` rows per statement, until none is left or `maxBatches` statements ran. Answers
 * how many were deleted and whether some may remain (the cap was reached). Each statement names one
 * organization, so it reads the (organization_id, timestamp) index and, under Citus, runs on one shard.
 */
export async function deleteExpiredTraces(db: Executor, opts: DeleteExpiredOptions): Promise<{ deleted: number; more: boolean }> {
  const batchSize = opts.batchSize ?? 1000;
  const maxBatches = opts.maxBatches ?? 1000;
  const before = opts.before.toISOString();
  // Only organizations with expired traces: the cap is not spent on the others, so every run makes
  // progress and one whose id sorts late is reached (docs/decisions.md, "Trace retention and search text").
  const orgs = await organizationsWithTracesBefore(db, await organizationIds(db), before);
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

/** Organization ids probed per statement by organizationsWithTracesBefore. */
const ORGS_PER_PROBE = 1000;

/** The organizations of `orgIds` that have a trace timestamped before `before`: one index probe each, in statements of ORGS_PER_PROBE. */
async function organizationsWithTracesBefore(db: Executor, orgIds: string[], before: string): Promise<string[]> {
  const found: string[] = [];
  for (let i = 0; i < orgIds.length; i += ORGS_PER_PROBE) {
    const ids = `{${orgIds.slice(i, i + ORGS_PER_PROBE).join(',')}}`;
    const rows = rowsOf<{ id: string }>(
      await db.execute(sql`
        select o.id from unnest(${ids}::uuid[]) with ordinality as o(id, n)
         where exists (select 1 from traces t where t.organization_id = o.id and t."timestamp" < ${before}::timestamptz)
         order by o.n`),
    );
    found.push(...rows.map((r) => r.id));
  }
  return found;
}
