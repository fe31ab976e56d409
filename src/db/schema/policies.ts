import { sql } from 'drizzle-orm';
import { boolean, foreignKey, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';

/**
 * Governance policies, enforced against agent activity. `ruleDefinition` is validated per
 * `policyType` by the policies service (src/domains/policies/rules.ts); `appliesToAgents` names
 * agents of the same organization (checked by the service: an array cannot carry a foreign key).
 */
export const policies = pgTable(
  'policies',
  {
    ...tenantColumns(),
    name: text('name').notNull(),
    description: text('description'),
    policyType: text('policy_type').notNull(),
    appliesToAgents: uuid('applies_to_agents').array().notNull().default([]),
    appliesToEnvironments: text('applies_to_environments').array().notNull().default([]),
    ruleDefinition: jsonb('rule_definition').$type<Record<string, unknown>>().notNull(),
    enforcementMode: text('enforcement_mode').notNull(),
    isActive: boolean('is_active').notNull().default(true),
    alertOnViolation: boolean('alert_on_violation').notNull().default(true),
    alertChannels: text('alert_channels').array().notNull().default([]),
    complianceFrameworks: text('compliance_frameworks').array().notNull().default([]),
    complianceControls: text('compliance_controls').array().notNull().default([]),
    severity: text('severity').notNull().default('warning'),
    actions: text('actions').array().notNull().default(['log']),
    agentId: uuid('agent_id'),
    priority: integer('priority').notNull().default(100),
    maxRequests: integer('max_requests'),
    timeWindowSeconds: integer('time_window_seconds'),
    notifyWebhookUrl: text('notify_webhook_url'),
    notifyEmail: text('notify_email').array().notNull().default([]),
    notes: text('notes'),
    tags: text('tags').array().notNull().default([]),
    createdBy: text('created_by'),
    // The HMAC key custom validator calls are signed with (`whsec_` + base64 of 32 random bytes): shown
    // once, in the create/update answer that generated it and by rotate-validator-secret (docs/decisions.md, "Enforce route").
    validatorSecret: text('validator_secret'),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // Agents are archived, never deleted (docs/decisions.md "Agents"); the organization's cascade removes both.
    foreignKey({ name: 'policies_agent_fk', columns: [t.organizationId, t.agentId], foreignColumns: [agents.organizationId, agents.id] }),
    // GET /policies: the organization's policies in evaluation order (priority, id); the other list
    // filters (isActive, enforcementMode, search) are applied on top of this range, which holds one
    // organization's policies only (hundreds at most).
    index('policies_org_priority_idx').on(t.organizationId, t.priority, t.id),
    // activePolicies(orgId) (src/domains/policies/cache.ts): the active policies of an organization by priority.
    index('policies_org_active_priority_idx')
      .on(t.organizationId, t.priority, t.id)
      .where(sql`${t.isActive}`),
    // GET /policies?policyType=...
    index('policies_org_type_idx').on(t.organizationId, t.policyType),
    // GET /policies?agentId=...: policies bound to one agent (agentId) ...
    index('policies_org_agent_idx')
      .on(t.organizationId, t.agentId)
      .where(sql`${t.agentId} is not null`),
    // ... or listing it in appliesToAgents (applies_to_agents @> array[agent]).
    index('policies_applies_to_agents_gin').using('gin', t.appliesToAgents),
  ],
);
