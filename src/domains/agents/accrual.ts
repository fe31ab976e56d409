/**
 * What ingest needs from the agents module, in ingest's transaction: the agents a batch names,
 * spend accrual and health (an UPDATE that ingest embeds in its one insert statement, a CTE, so a
 * batch stays one round trip), and budget crossings (events, and the pause of budgetAction
 * pause_agent). The agents table is written only here and in service.ts.
 */
import { and, eq, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.js';
import { agents } from '../../db/schema/index.js';
import { systemActor, type Actor } from '../../core/actor.js';
import type { Clock } from '../../core/clock.js';
import type { AuditContext } from '../audit/service.js';
import { emit } from '../events/outbox.js';
import { pauseInTx } from './service.js';
import type { SpendVersion } from './spend-counter.js';

export type AgentRow = typeof agents.$inferSelect;

/** Weight of each new trace in the agent's recent error rate (about the last 10-20 traces count). */
const EWMA_ALPHA = 0.1;
/** healthStatus from the recent error rate: below 10 % healthy, below 50 % degraded, else failing. */
export const DEGRADED_AT = 0.1;
export const FAILING_AT = 0.5;

/** The agents of the organization named by uuid or by external agentId, in one query. */
export async function findAgents(db: Db, orgId: string, uuids: string[], externalIds: string[]): Promise<AgentRow[]> {
  const conds: SQL[] = [];
  if (uuids.length) conds.push(inArray(agents.id, uuids));
  if (externalIds.length) conds.push(inArray(agents.agentId, externalIds));
  return conds.length ? await db.select().from(agents).where(and(eq(agents.organizationId, orgId), or(...conds))) : [];
}

/**
 * Health observations of a batch, per agent (every item counts: a start and its completion are two
 * observations), as the `v(id, decay, err_rate, n)` rows that feed agentUpdate. Agents in id
 * order, so concurrent batches take their row locks in one order.
 */
export function healthObservations(items: { agentId: string; error: boolean }[]): SQL[] {
  const observed = new Map<string, { n: number; errors: number }>();
  for (const { agentId, error } of items) {
    const o = observed.get(agentId) ?? { n: 0, errors: 0 };
    o.n += 1;
    if (error) o.errors += 1;
    observed.set(agentId, o);
  }
  const decay = (n: number) => Math.pow(1 - EWMA_ALPHA, n);
  return [...observed.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, o]) => sql`(${id}::uuid, ${decay(o.n)}::float8, ${o.errors / o.n}::float8, ${o.n}::int)`);
}

/** What the agent UPDATE answers: enough to see whether a budget threshold was crossed. */
export interface AgentSpend {
  id: string;
  current_month_cost_usd: number;
  monthly_budget_usd: number | null;
  warning_threshold_pct: number;
  budget_warned_month: string | null;
  budget_exceeded_month: string | null;
  /** The month the spend belongs to and the row's spend version after this accrual (the spend counter's). */
  spend_month: string;
  spend_seq: number;
}

/**
 * `UPDATE agents` adding spend deltas and health observations, from a relation `d(id, delta, decay,
 * err_rate, n)`; answers the spend columns. Agents are matched within the organization only.
 */
export function agentUpdate(orgId: string, month: string, from: SQL) {
  const ewma = sql.raw(`(a.error_rate_ewma * d.decay + d.err_rate * (1 - d.decay))`);
  return sql`update agents a set
      current_month_cost_usd = greatest(0, (case when a.spend_month = ${month} then a.current_month_cost_usd else 0 end) + d.delta),
      spend_month = ${month},
      spend_seq = a.spend_seq + 1,
      trace_count = a.trace_count + d.n,
      error_rate_ewma = ${ewma},
      health_status = case when d.n = 0 then a.health_status when ${ewma} >= ${FAILING_AT} then 'failing' when ${ewma} >= ${DEGRADED_AT} then 'degraded' else 'healthy' end,
      last_seen_at = case when d.n > 0 then now() else a.last_seen_at end
    from ${from}
    where a.id = d.id and a.organization_id = ${orgId}
    returning a.id, a.current_month_cost_usd, a.monthly_budget_usd, a.warning_threshold_pct, a.budget_warned_month, a.budget_exceeded_month, a.spend_month, a.spend_seq`;
}

/** The spend columns as numbers (numeric and bigint arrive as strings from pg, as numbers through json_agg). */
const spendOf = (a: AgentSpend): AgentSpend => ({
  ...a,
  current_month_cost_usd: Number(a.current_month_cost_usd),
  monthly_budget_usd: a.monthly_budget_usd === null ? null : Number(a.monthly_budget_usd),
  warning_threshold_pct: Number(a.warning_threshold_pct),
  spend_seq: Number(a.spend_seq),
});

/** The versions an accrual left, for the spend counter (written after commit). */
export const spendVersions = (spends: readonly AgentSpend[]): SpendVersion[] =>
  spends.map(spendOf).map((a) => ({ agentId: a.id, month: a.spend_month, spend: a.current_month_cost_usd, seq: a.spend_seq }));

/** True when an agent's new spend crosses a threshold whose event was not sent this month. */
function crossesBudget(a: AgentSpend, month: string) {
  if (a.monthly_budget_usd === null) return false;
  const pct = a.monthly_budget_usd > 0 ? (a.current_month_cost_usd / a.monthly_budget_usd) * 100 : a.current_month_cost_usd > 0 ? Infinity : 0;
  return (pct >= a.warning_threshold_pct && a.budget_warned_month !== month) || (pct >= 100 && a.budget_exceeded_month !== month);
}

/**
 * Raises the budget events (and pauses) of the agents whose new spend crossed a threshold this
 * month; answers their ids: rows changed beyond spend and health (a pause), for the agent cache.
 */
export async function settleBudgets(tx: Tx, principal: Actor, spends: AgentSpend[], month: string, clock: Clock): Promise<string[]> {
  const crossing = spends.map(spendOf).filter((a) => crossesBudget(a, month)).map((a) => a.id);
  if (crossing.length) await raiseBudgetEvents(tx, principal, crossing, month, clock);
  return crossing;
}

/** The actor of a pause for a reached budget. */
const BUDGET_ACTOR = (orgId: string) => systemActor(orgId, 'system:budget', 'Budget enforcement');

/**
 * budget_warning when spend crosses warningThresholdPct, budget_exceeded at 100 %: each at most
 * once per month, claimed by a conditional UPDATE so concurrent batches cannot both emit. With
 * budgetAction pause_agent, reaching the budget pauses the agent (kill_switch_triggered).
 */

async function raiseBudgetEvents(tx: Tx, principal: Actor, agentIds: string[], month: string, clock: Clock) {
  const orgId = principal.organizationId;
  const rows = await tx
    .select()
    .from(agents)
    .where(and(eq(agents.organizationId, orgId), inArray(agents.id, agentIds), sql`${agents.monthlyBudgetUsd} is not null`));
  for (const a of rows) {
    const budget = a.monthlyBudgetUsd!;
    const spend = a.currentMonthCostUsd;
    const pct = budget > 0 ? (spend / budget) * 100 : spend > 0 ? Infinity : 0;
    const data = { agentId: a.id, agentName: a.name, monthlyBudgetUsd: budget, currentMonthSpend: spend, percentUsed: Number.isFinite(pct) ? pct : 100, month };
    if (pct >= a.warningThresholdPct) {
      const [claimed] = await tx
        .update(agents)
        .set({ budgetWarnedMonth: month })
        .where(and(eq(agents.organizationId, orgId), eq(agents.id, a.id), sql`${agents.budgetWarnedMonth} is distinct from ${month}`))
        .returning({ id: agents.id });
      if (claimed) await emit(tx, orgId, 'budget_warning', a.id, { ...data, warningThresholdPct: a.warningThresholdPct });
    }
    if (pct >= 100) {
      const [claimed] = await tx
        .update(agents)
        .set({ budgetExceededMonth: month })
        .where(and(eq(agents.organizationId, orgId), eq(agents.id, a.id), sql`${agents.budgetExceededMonth} is distinct from ${month}`))
        .returning({ id: agents.id });
      if (claimed) {
        await emit(tx, orgId, 'budget_exceeded', a.id, { ...data, budgetAction: a.budgetAction });
        if (a.budgetAction === 'pause_agent' && a.status === 'active') {
          const ctx: AuditContext = { principal: BUDGET_ACTOR(orgId), ip: null, userAgent: null, clock };
          await pauseInTx(tx, ctx, a, `Monthly budget of ${budget} USD reached`, ctx.principal.userId, 'budget_exceeded');
        }
      }
    }
  }
}
