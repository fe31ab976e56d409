/**
 * The agent as `POST /policies/enforce` reads it: fresh on every request (status for the kill
 * switch, month-to-date spend for budget_cap from the counter ingestion moves), by its uuid or its
 * external agentId, in one query on the primary key or agents_org_agent_id_uq (docs/decisions.md,
 * "Enforce route").
 */
import { and, eq, or } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { agents } from '../../db/schema/index.js';
import { agentView } from './service.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The Agent resource an enforce request names (uuid or external agentId), as of `now`; null when the organization has none. */
export async function findAgentForEnforcement(db: Executor, orgId: string, idOrExternal: string, now: Date) {
  const byId = UUID_RE.test(idOrExternal);
  const rows = await db
    .select()
    .from(agents)
    .where(and(eq(agents.organizationId, orgId), byId ? or(eq(agents.id, idOrExternal.toLowerCase()), eq(agents.agentId, idOrExternal)) : eq(agents.agentId, idOrExternal)))
    .limit(2);
  // A uuid that is one agent's id and another's external agentId names the first: ids win.
  const row = rows.length > 1 ? (rows.find((r) => r.id === idOrExternal.toLowerCase()) ?? rows[0]) : rows[0];
  return row ? agentView(row, now) : null;
}

export type EnforcementAgent = NonNullable<Awaited<ReturnType<typeof findAgentForEnforcement>>>;
