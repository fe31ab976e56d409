/** Agents: registration, lifecycle (pause, resume, archive, kill switch), budgets, stats and agent-scoped keys. */
import { and, count, desc, eq, ilike, isNotNull, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { rowsOf } from '../../db/client.js';
import { containsPattern } from '../../db/like.js';
import { agents } from '../../db/schema/index.js';
import { conflict, invalidTransition, notFound, validation } from '../../core/errors.js';
import { changedFields } from '../../core/changes.js';
import type { Actor } from '../../core/actor.js';
import type { Environment } from '../../http/validation.js';
import { apiKeyView, deleteKeyOfAgent, generateKey, insertKey, listKeysOfAgent, resolveExpiry } from '../api-keys/index.js';
import { isLiveTeam } from '../teams/index.js';
import { findUser } from '../users/index.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { emit } from '../events/outbox.js';
import { AGENT_STATUSES, AGENT_TYPES, BUDGET_ACTIONS, HEALTH, PLATFORMS, type BudgetInput, type ListAgentsQuery, type RegisterAgentInput, type UpdateAgentInput } from './schemas.js';

type Row = typeof agents.$inferSelect;

/** 'YYYY-MM' of a date in UTC: the budget period. */
export const monthOf = (d: Date): string => {
  const t = d.getTime();
  // The last month asked is kept: budget_cap asks it per enforce request (the spend counter's month
  // against the clock's), and a month changes once a month; a date outside it computes afresh.
  if (t >= lastMonth.from && t < lastMonth.to) return lastMonth.month;
  const month = d.toISOString().slice(0, 7);
  if (Number.isFinite(t)) {
    // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
    const from = new Date(0);
    from.setUTCFullYear(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const to = new Date(from.getTime());
    to.setUTCMonth(to.getUTCMonth() + 1);
    lastMonth = { from: from.getTime(), to: to.getTime(), month };
  }
  return month;
};
let lastMonth = { from: 0, to: 0, month: '' };

/** Spend of the current month (a row still carrying last month's spend reads as 0). */
export const spendNow = (r: Pick<Row, 'spendMonth' | 'currentMonthCostUsd'>, now: Date) =>
  r.spendMonth === monthOf(now) ? r.currentMonthCostUsd : 0;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** The Agent resource, as of `now` (the month of its spend). */
export const agentView = (r: Row, now: Date) => ({
  id: r.id,
  organizationId: r.organizationId,
  agentId: r.agentId,
  name: r.name,
  description: r.description,
  // The columns are text; inserts take only these schemas' enum values (./schemas.ts).
  type: r.type as (typeof AGENT_TYPES)[number],
  platform: r.platform as (typeof PLATFORMS)[number],
  frameworkVersion: r.frameworkVersion,
  modelProvider: r.modelProvider,
  ownerUserId: r.ownerUserId,
  teamId: r.teamId,
  environment: r.environment as Environment,
  deploymentUrl: r.deploymentUrl,
  status: r.status as (typeof AGENT_STATUSES)[number],
  healthStatus: r.healthStatus as (typeof HEALTH)[number],
  lastSeenAt: iso(r.lastSeenAt),
  pausedAt: iso(r.pausedAt),
  pausedBy: r.pausedBy,
  pauseReason: r.pauseReason,
  monthlyBudgetUsd: r.monthlyBudgetUsd,
  budgetAction: r.budgetAction as (typeof BUDGET_ACTIONS)[number],
  currentMonthCostUsd: spendNow(r, now),
  tags: r.tags,
  metadata: r.metadata,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  createdBy: r.createdBy,
});

const scoped = (orgId: string, id: string) => and(eq(agents.organizationId, orgId), eq(agents.id, id));

/** One agent of the organization (an agent-scoped key sees only its own), or 404. */
export async function getAgent(db: Executor, principal: Pick<Actor, 'organizationId' | 'agentId'>, id: string, lock = false) {
  if (principal.agentId && principal.agentId !== id) throw notFound('Agent');
  const q = db.select().from(agents).where(scoped(principal.organizationId, id)).limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound('Agent');
  return row;
}

/** Registers an agent; 409 when its external agentId is taken in the organization. */
export async function registerAgent(db: Db, ctx: AuditContext, input: RegisterAgentInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(agents)
      .values({
        organizationId: orgId,
        agentId: input.agentId,
        name: input.name,
        description: input.description ?? null,
        type: input.type,
        platform: input.platform,
        frameworkVersion: input.frameworkVersion ?? null,
        modelProvider: input.modelProvider ?? null,
        environment: input.environment,
        deploymentUrl: input.deploymentUrl ?? null,
        tags: input.tags,
        metadata: input.metadata,
        createdBy: ctx.principal.userId,
      })
      // The unique index decides, so two concurrent registrations cannot both win.
      .onConflictDoNothing({ target: [agents.organizationId, agents.agentId] })
      .returning();
    if (!row) throw conflict(`An agent with agentId "${input.agentId}" already exists`);
    const view = agentView(row, ctx.clock.now());
    await writeAudit(tx, ctx, { action: 'agent.create', resourceType: 'agent', resourceId: row.id, after: view });
    await emit(tx, orgId, 'agent_registered', row.id, { agent: view });
    return view;
  });
}

/** A filtered page of agents, newest first. */
export async function listAgents(db: Db, orgId: string, q: ListAgentsQuery, now: Date) {
  const c: SQL[] = [eq(agents.organizationId, orgId)];
  if (q.status) c.push(eq(agents.status, q.status));
  if (q.environment) c.push(eq(agents.environment, q.environment));
  if (q.type) c.push(eq(agents.type, q.type));
  if (q.platform) c.push(eq(agents.platform, q.platform));
  if (q.teamId) c.push(eq(agents.teamId, q.teamId));
  if (q.tag) c.push(sql`${agents.tags} @> array[${q.tag}]::text[]`);
  if (q.search) {
    const p = containsPattern(q.search);
    c.push(or(ilike(agents.name, p), ilike(agents.agentId, p), ilike(agents.description, p))!);
  }
  const where = and(...c);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(agents).where(where).orderBy(desc(agents.createdAt), desc(agents.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(agents).where(where),
  ]);
  return { rows: rows.map((r) => agentView(r, now)), total };
}

/** Checks that referenced owner and team exist in the organization (422 naming the field otherwise). */
async function checkRefs(tx: Executor, orgId: string, input: UpdateAgentInput) {
  const fields: Record<string, string> = {};
  if (input.ownerUserId) {
    if (!(await findUser(tx, orgId, input.ownerUserId))) fields.ownerUserId = 'no such user in this organization';
  }
  if (input.teamId) {
    if (!(await isLiveTeam(tx, orgId, input.teamId))) fields.teamId = 'no such team in this organization';
  }
  if (Object.keys(fields).length) throw validation(fields);
}

/** Changes the given fields of an agent; event agent_updated. */
export async function updateAgent(db: Db, ctx: AuditContext, id: string, input: UpdateAgentInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await getAgent(tx, ctx.principal, id, true);
    await checkRefs(tx, orgId, input);
    const { name, description, tags, metadata, ownerUserId, teamId, deploymentUrl } = input;
    const set = changedFields(before, { name, description, tags, metadata, ownerUserId, teamId, deploymentUrl });
    if (!set) return agentView(before, ctx.clock.now());
    const [row] = await tx.update(agents).set({ ...set, updatedAt: new Date() }).where(scoped(orgId, id)).returning();
    const view = agentView(row, ctx.clock.now());
    await writeAudit(tx, ctx, { action: 'agent.update', resourceType: 'agent', resourceId: id, before: agentView(before, ctx.clock.now()), after: view });
    await emit(tx, orgId, 'agent_updated', id, { agent: view, changes: Object.keys(set) });
    return view;
  });
}

/** Archives an agent (its traces are kept); event agent_deleted. Archiving twice is harmless. */
export async function archiveAgent(db: Db, ctx: AuditContext, id: string) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await getAgent(tx, ctx.principal, id, true);
    if (before.status === 'archived') return agentView(before, ctx.clock.now());
    const [row] = await tx.update(agents).set({ status: 'archived', updatedAt: new Date() }).where(scoped(orgId, id)).returning();
    const view = agentView(row, ctx.clock.now());
    await writeAudit(tx, ctx, { action: 'agent.delete', resourceType: 'agent', resourceId: id, before: agentView(before, ctx.clock.now()), after: view });
    await emit(tx, orgId, 'agent_deleted', id, { agent: view });
    return view;
  });
}

const cannot = (from: string, action: string) => invalidTransition(`Cannot ${action} an agent that is ${from}`);

/**
 * Pauses an active agent inside the caller's transaction (manual pause, kill switch, budget):
 * stamps the pause fields, audits, and emits kill_switch_triggered.
 */
export async function pauseInTx(tx: Tx, ctx: AuditContext, before: Row, reason: string, pausedBy: string, trigger: string) {
  const [row] = await tx
    .update(agents)
    .set({ status: 'paused', pausedAt: ctx.clock.now(), pausedBy, pauseReason: reason, updatedAt: new Date() })
    .where(and(scoped(before.organizationId, before.id), eq(agents.status, 'active')))
    .returning();
  if (!row) return null;
  const view = agentView(row, ctx.clock.now());
  await writeAudit(tx, ctx, { action: 'agent.pause', resourceType: 'agent', resourceId: row.id, before: agentView(before, ctx.clock.now()), after: view, metadata: { trigger } });
  await emit(tx, before.organizationId, 'kill_switch_triggered', row.id, { agentId: row.id, agentName: row.name, reason, trigger, pausedBy });
  return view;
}

/** Pauses an agent (kill switch for one agent). */
export async function pauseAgent(db: Db, ctx: AuditContext, id: string, reason: string | undefined) {
  return db.transaction(async (tx) => {
    const before = await getAgent(tx, ctx.principal, id, true);
    if (before.status !== 'active') throw cannot(before.status, 'pause');
    return (await pauseInTx(tx, ctx, before, reason ?? 'Paused manually', ctx.principal.userId, 'manual'))!;
  });
}

/** Resumes a paused agent and clears the pause fields. */
export async function resumeAgent(db: Db, ctx: AuditContext, id: string) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await getAgent(tx, ctx.principal, id, true);
    if (before.status !== 'paused') throw cannot(before.status, 'resume');
    const [row] = await tx
      .update(agents)
      .set({ status: 'active', pausedAt: null, pausedBy: null, pauseReason: null, updatedAt: new Date() })
      .where(scoped(orgId, id))
      .returning();
    const view = agentView(row, ctx.clock.now());
    await writeAudit(tx, ctx, { action: 'agent.resume', resourceType: 'agent', resourceId: id, before: agentView(before, ctx.clock.now()), after: view });
    return view;
  });
}

/** Pauses every active agent of the organization (or of one environment); answers how many. */
export async function killSwitch(db: Db, ctx: AuditContext, reason: string, environment?: Environment) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const c = [eq(agents.organizationId, orgId), eq(agents.status, 'active')];
    if (environment) c.push(eq(agents.environment, environment));
    const rows = await tx.select().from(agents).where(and(...c)).for('update');
    const paused: string[] = [];
    for (const r of rows) if (await pauseInTx(tx, ctx, r, reason, ctx.principal.userId, 'kill_switch')) paused.push(r.id);
    await writeAudit(tx, ctx, {
      action: 'agent.kill_switch',
      resourceType: 'organization',
      resourceId: orgId,
      metadata: { reason, environment: environment ?? null, pausedCount: paused.length, agentIds: paused },
    });
    return { pausedCount: paused.length, agentIds: paused, environment: environment ?? null, reason };
  });
}

/** Sets an agent's monthly budget, action and warning threshold. */
export async function setBudget(db: Db, ctx: AuditContext, id: string, input: BudgetInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await getAgent(tx, ctx.principal, id, true);
    const [row] = await tx
      .update(agents)
      .set({ monthlyBudgetUsd: input.monthlyBudgetUsd, budgetAction: input.budgetAction, warningThresholdPct: input.warningThresholdPct, updatedAt: new Date() })
      .where(scoped(orgId, id))
      .returning();
    await writeAudit(tx, ctx, { action: 'agent.budget_update', resourceType: 'agent', resourceId: id, before: budgetView(before, ctx.clock.now()), after: budgetView(row, ctx.clock.now()) });
    return budgetView(row, ctx.clock.now());
  });
}

/**
 * AgentBudget. Projection: month-to-date spend divided by the elapsed part of the month (at least
 * one hour, so the first minutes do not explode), times the month's length.
 */
export function budgetView(r: Row, now: Date) {
  const spend = spendNow(r, now);
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const elapsed = Math.max(now.getTime() - start, 3_600_000);
  const projected = (spend / elapsed) * (end - start);
  const budget = r.monthlyBudgetUsd;
  return {
    agentId: r.id,
    agentName: r.name,
    monthlyBudgetUsd: budget,
    // Spend is exact (numeric); only derived ratios are rounded.
    currentMonthSpend: spend,
    percentUsed: budget ? round((spend / budget) * 100) : 0,
    budgetAction: r.budgetAction as (typeof BUDGET_ACTIONS)[number],
    projectedMonthSpend: round(projected),
    daysRemainingInPeriod: Math.max(0, Math.ceil((end - now.getTime()) / 86_400_000)),
    willExceedBudget: budget !== null && projected > budget,
    warningThresholdPct: r.warningThresholdPct,
  };
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** Budgets of every agent that has one. */
export async function listBudgets(db: Db, orgId: string, limit: number, offset: number, now: Date) {
  const where = and(eq(agents.organizationId, orgId), isNotNull(agents.monthlyBudgetUsd), ne(agents.status, 'archived'));
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(agents).where(where).orderBy(agents.name).limit(limit).offset(offset),
    db.select({ total: count() }).from(agents).where(where),
  ]);
  return { rows: rows.map((r) => budgetView(r, now)), total };
}

interface PeriodRow {
  [k: string]: unknown;
}

/**
 * Stats for the last 24 h, 7 d and 30 d in one SQL statement (p95 by percentile_cont). `error`
 * counts error and timeout traces; successRate is success / total (0 when there are none).
 */
export async function agentStats(db: Db, principal: Actor, id: string, now: Date) {
  await getAgent(db, principal, id);
  // The windows end at the injected clock's now, not the database's.
  const at = sql`${now.toISOString()}::timestamptz`;
  const periods = { last24h: '24 hours', last7d: '7 days', last30d: '30 days' } as const;
  const cols = Object.entries(periods).map(([k, iv]) => {
    const f = sql`timestamp >= ${at} - ${sql.raw(`interval '${iv}'`)}`;
    return sql`count(*) filter (where ${f}) as ${sql.raw(`"${k}_total"`)},
      count(*) filter (where ${f} and status = 'success') as ${sql.raw(`"${k}_success"`)},
      count(*) filter (where ${f} and status in ('error', 'timeout')) as ${sql.raw(`"${k}_error"`)},
      coalesce(avg(duration_ms) filter (where ${f}), 0) as ${sql.raw(`"${k}_avg"`)},
      coalesce(percentile_cont(0.95) within group (order by duration_ms) filter (where ${f}), 0) as ${sql.raw(`"${k}_p95"`)},
      coalesce(sum(cost_usd) filter (where ${f}), 0) as ${sql.raw(`"${k}_cost"`)}`;
  });
  const res = await db.execute(sql`select ${sql.join(cols, sql`, `)} from traces
    where organization_id = ${principal.organizationId} and agent_id = ${id} and timestamp >= ${at} - interval '30 days'`);
  const r = rowsOf<PeriodRow>(res)[0];
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(periods)) {
    const total = Number(r[`${k}_total`]);
    const success = Number(r[`${k}_success`]);
    out[k] = {
      total,
      success,
      error: Number(r[`${k}_error`]),
      successRate: total ? round(success / total) : 0,
      avgDurationMs: round(Number(r[`${k}_avg`])),
      p95DurationMs: round(Number(r[`${k}_p95`])),
      // An exact numeric sum: not rounded.
      totalCostUsd: Number(r[`${k}_cost`]),
    };
  }
  return out as Record<keyof typeof periods, { total: number; success: number; error: number; successRate: number; avgDurationMs: number; p95DurationMs: number; totalCostUsd: number }>;
}

export const AGENT_KEY_SCOPES = ['trace:write', 'policy:read', 'agent:read'] as const;

/** Creates a key that can only ingest and enforce for this agent (shown once). */
export async function createAgentKey(
  db: Db,
  ctx: AuditContext,
  id: string,
  input: { name: string; description?: string | null; expiresAt?: string | null; ipAllowlist?: string[] | null },
) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const agent = await getAgent(tx, ctx.principal, id);
    const key = generateKey(agent.environment as Environment);
    const row = await insertKey(tx, {
      organizationId: orgId,
      agentId: agent.id,
      key,
      name: input.name,
      description: input.description ?? null,
      environment: agent.environment as Environment,
      scopes: [...AGENT_KEY_SCOPES],
      createdBy: ctx.principal.userId,
      expiresAt: await resolveExpiry(tx, orgId, input.expiresAt, ctx.clock.now()),
      ipAllowlist: input.ipAllowlist ?? null,
    });
    const view = apiKeyView(row);
    await writeAudit(tx, ctx, { action: 'api_key.create', resourceType: 'api_key', resourceId: row.id, after: view, metadata: { agentId: agent.id } });
    return { ...view, key };
  });
}

/** The keys of one agent. */
export async function listAgentKeys(db: Db, principal: Actor, id: string) {
  await getAgent(db, principal, id);
  const rows = await listKeysOfAgent(db, principal.organizationId, id);
  return rows.map(apiKeyView);
}

/** Deletes one of an agent's keys; it stops working at once. */
export async function deleteAgentKey(db: Db, ctx: AuditContext, id: string, keyId: string, onChanged: (hash: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  const hash = await db.transaction(async (tx) => {
    await getAgent(tx, ctx.principal, id);
    const row = await deleteKeyOfAgent(tx, orgId, id, keyId);
    if (!row) throw notFound('API key');
    await writeAudit(tx, ctx, { action: 'api_key.delete', resourceType: 'api_key', resourceId: keyId, before: apiKeyView(row), metadata: { agentId: id } });
    return row.keyHash;
  });
  await onChanged(hash);
}
