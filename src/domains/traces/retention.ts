/** Trace retention: deleting traces older than a cutoff, in bounded batches (docs/decisions.md, "Trace retention"). */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { deleteExpiredRows, type RetentionLimits, type RetentionRun } from '../../db/retention.js';
import { traces } from '../../db/schema/index.js';
import { organizationIds } from '../organizations/index.js';

export interface DeleteExpiredOptions extends RetentionLimits {
  /** Traces whose `timestamp` is before this instant are deleted. */
  before: Date;
}

/**
 * Deletes traces timestamped before `before`, organization by organization (only those that have
 * some), in bounded batches (src/db/retention.ts). Each statement names one organization, so it
 * reads the (organization_id, timestamp) index and, under Citus, runs on one shard.
 */
export async function deleteExpiredTraces(db: Executor, opts: DeleteExpiredOptions): Promise<RetentionRun> {
  const expired = sql`${traces.timestamp} < ${opts.before.toISOString()}::timestamptz`;
  return deleteExpiredRows(db, traces, expired, await organizationIds(db), opts);
}
