/**
 * The agent as `POST /policies/enforce` reads it: fresh on every request (status for the kill
 * switch, month-to-date spend for budget_cap from the counter ingestion moves), by its uuid or its
 * external agentId, in one query on the primary key or agents_org_agent_id_uq (docs/decisions.md,
 * "Enforce route"). The query is prepared once per database (drizzle `.prepare`): the SQL is not
 * rebuilt per request, and PostgreSQL parses and plans it once per connection.
 */
import { and, eq, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { agents } from '../../db/schema/index.js';
import { agentView } from './service.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function prepare(db: Db) {
  const org = eq(agents.organizationId, sql.placeholder('org'));
  return {
    byIdOrExternal: db.select().from(agents).where(and(org, or(eq(agents.id, sql.placeholder('id')), eq(agents.agentId, sql.placeholder('ext'))))).limit(2).prepare('enforce_agent_by_id'),
    byExternal: db.select().from(agents).where(and(org, eq(agents.agentId, sql.placeholder('ext')))).limit(1).prepare('enforce_agent_by_external'),
  };
}
const prepared = new WeakMap<Db, ReturnType<typeof prepare>>();

/** The Agent resource an enforce request names (uuid or external agentId), as of `now`; null when the organization has none. */
export async function findAgentForEnforcement(db: Db, orgId: string, idOrExternal: string, now: Date) {
  let q = prepared.get(db);
  if (!q) prepared.set(db, (q = prepare(db)));
  if (UUID_RE.test(idOrExternal)) {
    const id = idOrExternal.toLowerCase();
    const rows = await q.byIdOrExternal.execute({ org: orgId, id, ext: idOrExternal });
    // A uuid that is one agent's id and another's external agentId names the first: ids win.
    const row = rows.find((r) => r.id === id) ?? rows[0];
    return row ? agentView(row, now) : null;
  }
  const [row] = await q.byExternal.execute({ org: orgId, ext: idOrExternal });
  return row ? agentView(row, now) : null;
}

export type EnforcementAgent = NonNullable<Awaited<ReturnType<typeof findAgentForEnforcement>>>;
