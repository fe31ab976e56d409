import { doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { tenantPrimaryKey } from './columns.js';

/**
 * The policy decision log: one row per deny and require_approval decision of POST /policies/enforce
 * (allow decisions are only counted, in policy_decision_counts). Written in batches by the
 * policy-decisions module (docs/decisions.md, "Decision log and policy stats"). `violations` and
 * `warnings` are the PolicyViolation objects as answered: codes and evidence offsets, never the
 * matched text. `id` is the decisionId of the enforce response.
 *
 * No foreign keys: the log is written only by our flush from an agent the enforce route loaded,
 * a check per row would cost every batch, and a row that could never be written (a foreign key
 * gone) would hold back every later batch. An organization deletion (none exists yet) must delete
 * these rows explicitly, like api_key_hashes.
 */
export const policyDecisions = pgTable(
  'policy_decisions',
  {
    organizationId: uuid('organization_id').notNull(),
    id: uuid('id').notNull(),
    agentId: uuid('agent_id').notNull(),
    actionType: text('action_type').notNull(),
    actionName: text('action_name').notNull(),
    actionResource: text('action_resource'),
    environment: text('environment').notNull(),
    decision: text('decision').notNull(),
    violations: jsonb('violations').notNull(),
    warnings: jsonb('warnings').notNull(),
    /** The distinct policy ids of `violations` (the kill switch has none): the `policyId` filter. */
    policyIds: uuid('policy_ids').array().notNull(),
    evaluatedPolicies: integer('evaluated_policies').notNull(),
    evaluationMs: doublePrecision('evaluation_ms').notNull(),
    accessGrantId: uuid('access_grant_id'),
    sessionId: text('session_id'),
    traceId: text('trace_id'),
    userId: text('user_id'),
    /** The decision's time (the enforce route's clock), not the flush's. */
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // GET /policies/decisions newest first, and its from/to range (DESC NULLS FIRST is what
    // `ORDER BY x DESC` means, so the planner reads the order from the index and LIMIT stops early).
    index('policy_decisions_org_created_idx').on(t.organizationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The same per agent (agentId filter; every read by an agent-scoped key).
    index('policy_decisions_org_agent_created_idx').on(t.organizationId, t.agentId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // policyId filter: `policy_ids @> array[$id]` (uuids are unique across organizations, so the
    // organization condition is a recheck, not a scan).
    index('policy_decisions_policy_ids_gin').using('gin', t.policyIds),
  ],
);

/**
 * Decision counters: per (organization, policy, agent, hour) how many decisions each policy
 * allowed (evaluated without a match), denied, sent for approval or warned about. Upserted by the
 * flush with `on conflict … do update set x = x + excluded.x`. The natural key is the primary key
 * (organization first, as every tenant key): there is no row id to look anything up by, and a
 * unique index beside an (organization_id, id) key would be a second index on every upsert.
 */
export const policyDecisionCounts = pgTable(
  'policy_decision_counts',
  {
    organizationId: uuid('organization_id').notNull(),
    policyId: uuid('policy_id').notNull(),
    agentId: uuid('agent_id').notNull(),
    /** Start of the hour (UTC) of the decisions counted. */
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    allowCount: integer('allow_count').notNull().default(0),
    denyCount: integer('deny_count').notNull().default(0),
    requireApprovalCount: integer('require_approval_count').notNull().default(0),
    warnCount: integer('warn_count').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.policyId, t.agentId, t.hour] }),
    // GET /policies/stats: the organization's buckets in the window (with the agent filter: the next one).
    index('policy_decision_counts_org_hour_idx').on(t.organizationId, t.hour),
    index('policy_decision_counts_org_agent_hour_idx').on(t.organizationId, t.agentId, t.hour),
    // Retention: buckets older than the longest stats window, across organizations.
    index('policy_decision_counts_hour_idx').on(t.hour),
  ],
);

