/**
 * The quality aggregate a quality_threshold policy reads: an agent's error rate (error and timeout
 * traces over all, as the stats count them) or p95 duration over the last minutes, in one query on
 * traces_org_agent_ts_id_idx. The enforce route caches the answer for a few seconds
 * (docs/decisions.md, "Enforce route"): this is never run per decision.
 */
import { and, eq, gte, lte, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { traces } from '../../db/schema/index.js';

export type QualityMetric = 'error_rate' | 'p95_duration_ms';

/** The agent's metric over (now - windowMinutes, now]; null when it has no trace there (or none with a duration, for p95). */
export async function qualityAggregate(db: Executor, orgId: string, agentId: string, metric: QualityMetric, windowMinutes: number, now: Date): Promise<number | null> {
  const since = new Date(now.getTime() - windowMinutes * 60_000);
  const value =
    metric === 'error_rate'
      ? sql<string | null>`case when count(*) = 0 then null else (count(*) filter (where ${traces.status} in ('error', 'timeout')))::float8 / count(*) end`
      : sql<string | null>`percentile_cont(0.95) within group (order by ${traces.durationMs})`;
  const [row] = await db
    .select({ value })
    .from(traces)
    .where(and(eq(traces.organizationId, orgId), eq(traces.agentId, agentId), gte(traces.timestamp, since), lte(traces.timestamp, now)));
  const v = row?.value;
  return v === null || v === undefined ? null : Number(v);
}
