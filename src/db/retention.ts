/**
 * Retention of tenant tables keyed by (organization_id, id): deleting the rows a condition marks
 * expired, organization by organization, in bounded batches (docs/decisions.md, "Retention of the
 * decision log and the outbox"). The owning domain names its table and condition; this file knows
 * no table.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { rowsOf, type Executor } from './client.js';

const DAY_MS = 86_400_000;

/** The cutoff of a retention of `days` at `now`: rows older expire; null when retention is off (0). */
export function retentionCutoff(days: number, now: Date): Date | null {
  return days > 0 ? new Date(now.getTime() - days * DAY_MS) : null;
}

/** Bounds of one retention run. */
export interface RetentionLimits {
  /** Rows per DELETE statement: bounds each statement's locks, WAL burst and duration. */
  batchSize?: number;
  /** DELETE statements per run at most; the rest waits for the next run. */
  maxBatches?: number;
}

/** What one run deleted, and whether rows may remain (the statement cap was reached). */
export interface RetentionRun {
  deleted: number;
  more: boolean;
}

/** Organization ids probed per statement for expired rows. */
const ORGS_PER_PROBE = 1000;

/**
 * Deletes the rows of `table` (keyed by organization_id, id) that `expired` selects (a condition on
 * the table's own columns), for the organizations of `orgIds` that have some, `batchSize` rows per statement,
 * until none is left or `maxBatches` statements ran. Each statement names one organization, so an
 * index led by organization_id bounds it (and, under Citus, it runs on one shard).
 */
export async function deleteExpiredRows(db: Executor, table: PgTable, expired: SQL, orgIds: readonly string[], limits: RetentionLimits = {}): Promise<RetentionRun> {
  // Only organizations with expired rows: the cap is not spent on the others, so every run makes
  // progress and an organization whose id sorts late is reached.
  const orgs = await organizationsWith(db, table, expired, orgIds);
  return deleteInPartitions(db, table, expired, orgs.map((orgId) => sql`${table}.organization_id = ${orgId}`), limits);
}

/**
 * Deletes what `expired` selects of `table`, partition by partition, `batchSize` rows per statement,
 * until none is left or `maxBatches` statements ran. A partition is a condition naming one
 * organization and, where an index reaches further, what lies below it (one webhook's messages):
 * each statement stays within what that index bounds, on one shard under Citus.
 */
export async function deleteInPartitions(db: Executor, table: PgTable, expired: SQL, partitions: readonly SQL[], limits: RetentionLimits = {}): Promise<RetentionRun> {
  const { batchSize = 1000, maxBatches = 1000 } = limits;
  let deleted = 0;
  let batches = 0;
  for (const partition of partitions) {
    for (;;) {
      if (batches >= maxBatches) return { deleted, more: true };
      batches++;
      const [{ n }] = rowsOf<{ n: number | string }>(
        await db.execute(sql`
          -- The condition again in the DELETE: a row that stopped being expired since it was chosen stays.
          with doomed as (
            select id from ${table} where ${partition} and ${expired} limit ${batchSize}
          ), gone as (
            delete from ${table} using doomed where ${partition} and ${table}.id = doomed.id and ${expired} returning 1
          )
          select count(*)::int as n from gone`),
      );
      deleted += Number(n);
      if (Number(n) < batchSize) break;
    }
  }
  return { deleted, more: false };
}

/** The organizations of `orgIds` with a row `expired` selects: one index probe each, ORGS_PER_PROBE per statement, in the given order. */
async function organizationsWith(db: Executor, table: PgTable, expired: SQL, orgIds: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (let i = 0; i < orgIds.length; i += ORGS_PER_PROBE) {
    const ids = `{${orgIds.slice(i, i + ORGS_PER_PROBE).join(',')}}`;
    const rows = rowsOf<{ id: string }>(
      await db.execute(sql`
        select o.id from unnest(${ids}::uuid[]) with ordinality as o(id, n)
         where exists (select 1 from ${table} where ${table}.organization_id = o.id and ${expired})
         order by o.n`),
    );
    found.push(...rows.map((r) => r.id));
  }
  return found;
}
