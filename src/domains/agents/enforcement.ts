/**
 * The agent as `POST /policies/enforce` reads it (docs/decisions.md, "Enforce route"): the row from
 * the agent cache (status for the kill switch, environment, what CEL sees as `request.agent`),
 * invalidated after every committed change of its status or settings, and the month-to-date spend
 * for budget_cap from the counter ingestion moves (spend-counter.ts). The queries are prepared once per database (drizzle
 * `.prepare`): the SQL is not rebuilt per request, and PostgreSQL parses and plans it once per
 * connection.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { agents } from '../../db/schema/index.js';
import { AgentCache } from './agent-cache.js';
import type { SharedState } from '../../lib/shared-state.js';
import { agentView } from './service.js';
import { SpendCounter } from './spend-counter.js';

function prepare(db: Db) {
  const org = eq(agents.organizationId, sql.placeholder('org'));
  return {
    byId: db.select().from(agents).where(and(org, eq(agents.id, sql.placeholder('id')))).limit(1).prepare('enforce_agent_by_id'),
    byExternal: db.select().from(agents).where(and(org, eq(agents.agentId, sql.placeholder('ext')))).limit(1).prepare('enforce_agent_by_external'),
    spend: db
      .select({ spend: agents.currentMonthCostUsd, month: agents.spendMonth, seq: agents.spendSeq })
      .from(agents)
      .where(and(org, eq(agents.id, sql.placeholder('id'))))
      .prepare('enforce_agent_spend'),
  };
}
const prepared = new WeakMap<Db, ReturnType<typeof prepare>>();
const queries = (db: Db) => {
  let q = prepared.get(db);
  if (!q) prepared.set(db, (q = prepare(db)));
  return q;
};

/** The agent cache of one app over its database and shared state. */
export function createAgentCache(db: Db, state: SharedState, opts: { ttlMs?: number; max?: number } = {}) {
  return new AgentCache(
    {
      byId: async (org, id) => (await queries(db).byId.execute({ org, id }))[0] ?? null,
      byExternal: async (org, ext) => (await queries(db).byExternal.execute({ org, ext }))[0] ?? null,
    },
    state,
    opts,
  );
}

type AgentRow = typeof agents.$inferSelect;

/**
 * The Agent resource of each cached row, built once per row and month (its spend field depends on
 * the month): a cached row is replaced on a write, never changed, so its view is too. Frozen, since
 * every request for the agent shares it.
 */
const views = new WeakMap<AgentRow, { from: number; to: number; view: Readonly<ReturnType<typeof agentView>> }>();

/** The Agent resource of a cached row as of `now` (built once per row and month). */
export function enforcementView(row: AgentRow, now: Date) {
  const t = now.getTime();
  let v = views.get(row);
  if (!v || t < v.from || t >= v.to) {
    const from = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    views.set(row, (v = { from, to: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1), view: Object.freeze(agentView(row, now)) }));
  }
  return v.view;
}

/**
 * The Agent resource an enforce request names (uuid or external agentId), as of `now`, from the
 * cache; null when the organization has none. At once (no promise) when the row is cached.
 */
export function findAgentForEnforcement(cache: AgentCache, orgId: string, idOrExternal: string, now: Date) {
  const cached = cache.peek(orgId, idOrExternal);
  if (cached) return enforcementView(cached, now);
  return cache.get(orgId, idOrExternal).then((row) => (row ? enforcementView(row, now) : null));
}

/** The spend counter over the agents' rows (`exact`: see spend-counter.ts). */
export function createSpendCounter(db: Db, state: SharedState, exact: boolean) {
  return new SpendCounter(
    state,
    async (orgId, agentId) => {
      const [r] = await queries(db).spend.execute({ org: orgId, id: agentId });
      return r ? { agentId, month: r.month, spend: r.spend, seq: r.seq } : null;
    },
    exact,
  );
}

export type EnforcementAgent = ReturnType<typeof enforcementView>;
