import { sql } from 'drizzle-orm';
import { foreignKey, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';

/**
 * Access grants: permission for one agent to perform actions matching a glob (optionally on
 * matching resources, optionally only with the exact parameters of `parametersDigest`) until
 * `expiresAt` (docs/decisions.md, "Access grants"). `status` is stored as pending | approved |
 * denied | revoked | expired; a pending or approved row past `expiresAt` reads as expired.
 * `policyId` names a row of the policies domain and is not a foreign key (a grant outlives its policy).
 */
export const accessGrants = pgTable(
  'access_grants',
  {
    ...tenantColumns(),
    agentId: uuid('agent_id').notNull(),
    action: text('action').notNull(),
    resource: text('resource'),
    parametersDigest: text('parameters_digest'),
    policyId: uuid('policy_id'),
    policyVersion: timestamp('policy_version', { withTimezone: true }),
    status: text('status').notNull(),
    reason: text('reason'),
    requestedBy: text('requested_by').notNull(),
    requestedAt: timestamp('requested_at', { withTimezone: true }).notNull(),
    decidedBy: text('decided_by'),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    foreignKey({ name: 'access_grants_agent_fk', columns: [t.organizationId, t.agentId], foreignColumns: [agents.organizationId, agents.id] }).onDelete('cascade'),
    // The enforcement lookup (findLiveGrant): an agent's approved grants not yet expired, one
    // range scan; revoked, denied and pending rows are not in this index at all.
    index('access_grants_live_idx')
      .on(t.organizationId, t.agentId, t.expiresAt)
      .where(sql`${t.status} = 'approved'`),
    // GET /access-grants?agentId=…, newest first.
    index('access_grants_agent_idx').on(t.organizationId, t.agentId, t.createdAt),
    // At most one pending request per (organization, agent, action, resource, parameters digest).
    // requestGrant inserts with ON CONFLICT DO NOTHING and then reads the pending row: concurrent
    // enforcements that all find no grant create one row between them, never one each. coalesce
    // makes "no resource" and "no digest" equal to each other (a plain unique index treats NULLs
    // as distinct, and drizzle cannot declare NULLS NOT DISTINCT on an index).
    uniqueIndex('access_grants_pending_uq')
      .on(t.organizationId, t.agentId, t.action, sql`coalesce(${t.resource}, '')`, sql`coalesce(${t.parametersDigest}, '')`)
      .where(sql`${t.status} = 'pending'`),
  ],
);
