/** Reading the decision log and the decision counters (docs/decisions.md, "Decision log and policy stats"). */
import { and, count, desc, eq, gte, lt, lte, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/client.js';
import { deleteExpiredRows, retentionCutoff, type RetentionLimits, type RetentionRun } from '../../db/retention.js';
import { policyDecisionCounts, policyDecisions } from '../../db/schema/index.js';
import { notFound } from '../../core/errors.js';
import type { Actor } from '../../core/actor.js';
import { organizationIds } from '../organizations/index.js';
import { policyNames, type PolicyViolation } from '../policies/index.js';
import type { ListDecisionsQuery, PolicyDecision, PolicyStats } from './schemas.js';

type Row = typeof policyDecisions.$inferSelect;
type Reader = Pick<Actor, 'organizationId' | 'agentId'>;

const HOUR_MS = 3_600_000;
/** Buckets older than the longest stats window (720 h) and a day's margin are deleted by the retention schedule. */
export const COUNTS_RETENTION_HOURS = 744;

/** The PolicyDecision resource. */
export const decisionView = (r: Row): PolicyDecision => ({
  decisionId: r.id,
  organizationId: r.organizationId,
  agentId: r.agentId,
  environment: r.environment as PolicyDecision['environment'],
  action: { type: r.actionType, name: r.actionName, resource: r.actionResource },
  decision: r.decision as PolicyDecision['decision'],
  violations: r.violations as PolicyViolation[],
  warnings: r.warnings as PolicyViolation[],
  evaluatedPolicies: r.evaluatedPolicies,
  evaluationMs: r.evaluationMs,
  accessGrantId: r.accessGrantId,
  sessionId: r.sessionId,
  traceId: r.traceId,
  userId: r.userId,
  createdAt: r.createdAt.toISOString(),
});

/** One page of the organization's decisions, newest first; an agent-scoped principal sees only its agent's. */
export async function listDecisions(db: Db, p: Reader, q: ListDecisionsQuery) {
  const t = policyDecisions;
  const c: SQL[] = [eq(t.organizationId, p.organizationId)];
  if (p.agentId) c.push(eq(t.agentId, p.agentId));
  if (q.agentId) c.push(eq(t.agentId, q.agentId));
  // GIN (policy_decisions_policy_ids_gin): array containment.
  if (q.policyId) c.push(sql`${t.policyIds} @> array[${q.policyId}]::uuid[]`);
  if (q.decision) c.push(eq(t.decision, q.decision));
  if (q.from) c.push(gte(t.createdAt, new Date(q.from)));
  if (q.to) c.push(lte(t.createdAt, new Date(q.to)));
  const where = and(...c);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(t).where(where).orderBy(desc(t.createdAt), desc(t.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(t).where(where),
  ]);
  return { rows: rows.map(decisionView), total };
}

/** One decision of the organization (of the principal's agent, for an agent-scoped key), or NOT_FOUND. */
export async function getDecision(db: Db, p: Reader, id: string) {
  const t = policyDecisions;
  const c: SQL[] = [eq(t.organizationId, p.organizationId), eq(t.id, id)];
  if (p.agentId) c.push(eq(t.agentId, p.agentId));
  const [row] = await db.select().from(t).where(and(...c)).limit(1);
  if (!row) throw notFound('Policy decision');
  return decisionView(row);
}

/** Start of the first hourly bucket of a `hours` window ending at `now`: the bucket holding now − hours. */
export const windowStart = (now: Date, hours: number) => new Date(Math.floor((now.getTime() - hours * HOUR_MS) / HOUR_MS) * HOUR_MS);

/** Per policy, the outcome counts of the buckets in the window (optionally one agent's), with current names and totals. */
export async function policyStats(db: Db, orgId: string, q: { hours: number; agentId?: string }, now: Date): Promise<PolicyStats> {
  const t = policyDecisionCounts;
  const from = windowStart(now, q.hours);
  const c: SQL[] = [eq(t.organizationId, orgId), gte(t.hour, from), lte(t.hour, now)];
  if (q.agentId) c.push(eq(t.agentId, q.agentId));
  // sum(int) is bigint: read as text by the drivers, converted here (a window's count fits a double).
  const rows = await db
    .select({
      policyId: t.policyId,
      allow: sql<string>`sum(${t.allowCount})`,
      deny: sql<string>`sum(${t.denyCount})`,
      requireApproval: sql<string>`sum(${t.requireApprovalCount})`,
      warn: sql<string>`sum(${t.warnCount})`,
    })
    .from(t)
    .where(and(...c))
    .groupBy(t.policyId);
  const names = await policyNames(db, orgId, rows.map((r) => r.policyId));
  const policies = rows
    .map((r) => ({ policyId: r.policyId, policyName: names.get(r.policyId) ?? null, allow: Number(r.allow), deny: Number(r.deny), requireApproval: Number(r.requireApproval), warn: Number(r.warn) }))
    .sort((a, b) => total(b) - total(a) || (a.policyId < b.policyId ? -1 : 1));
  const totals = { allow: 0, deny: 0, requireApproval: 0, warn: 0 };
  for (const p of policies) {
    totals.allow += p.allow;
    totals.deny += p.deny;
    totals.requireApproval += p.requireApproval;
    totals.warn += p.warn;
  }
  return { hours: q.hours, from: from.toISOString(), to: now.toISOString(), policies, totals };
}

const total = (p: { allow: number; deny: number; requireApproval: number; warn: number }) => p.allow + p.deny + p.requireApproval + p.warn;

/**
 * Deletes counter buckets older than COUNTS_RETENTION_HOURS, at most `batchSize` rows per statement
 * and `maxBatches` statements per run (short locks; a run that hits the cap leaves the rest to the next).
 */
export async function deleteExpiredCounts(db: Db, now: Date, opts: { batchSize?: number; maxBatches?: number } = {}) {
  const { batchSize = 10_000, maxBatches = 100 } = opts;
  const before = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - COUNTS_RETENTION_HOURS * HOUR_MS);
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const [{ n }] = rowsOf<{ n: number | string }>(
      await db.execute(sql`with gone as (
        delete from policy_decision_counts
        where (organization_id, policy_id, agent_id, hour) in (
          select organization_id, policy_id, agent_id, hour from policy_decision_counts where hour < ${before} limit ${batchSize})
        returning 1)
      select count(*)::int as n from gone`),
    );
    const gone = Number(n);
    deleted += gone;
    if (gone < batchSize) return { deleted, more: false };
  }
  return { deleted, more: true };
}

/**
 * Deletes decision rows older than `days` before `now` (by their createdAt; nothing when 0), in
 * bounded batches per organization: the decision log's retention. The counters keep their own,
 * fixed retention (deleteExpiredCounts): the stats windows need them whatever the log keeps.
 */
export async function deleteExpiredDecisions(db: Db, days: number, now: Date, limits: RetentionLimits = {}): Promise<RetentionRun> {
  const before = retentionCutoff(days, now);
  if (!before) return { deleted: 0, more: false };
  // policy_decisions_org_created_idx bounds each statement: organization, then created_at.
  return deleteExpiredRows(db, policyDecisions, lt(policyDecisions.createdAt, before), await organizationIds(db), limits);
}
