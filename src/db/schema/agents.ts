import { sql } from 'drizzle-orm';
import { bigint, doublePrecision, index, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { tenantColumns, tenantPrimaryKey, timestampColumns, usd } from './columns.js';

/** Registered agents. Spend of the current UTC month accrues on the row (`spendMonth` names that month). */
export const agents = pgTable(
  'agents',
  {
    ...tenantColumns(),
    agentId: text('agent_id').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    type: text('type').notNull(),
    platform: text('platform').notNull(),
    frameworkVersion: text('framework_version'),
    modelProvider: text('model_provider'),
    ownerUserId: uuid('owner_user_id'),
    teamId: uuid('team_id'),
    environment: text('environment').notNull(),
    deploymentUrl: text('deployment_url'),
    status: text('status').notNull().default('active'),
    healthStatus: text('health_status').notNull().default('unknown'),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }),
    pausedAt: timestamp('paused_at', { withTimezone: true }),
    pausedBy: text('paused_by'),
    pauseReason: text('pause_reason'),
    monthlyBudgetUsd: usd('monthly_budget_usd'),
    budgetAction: text('budget_action').notNull().default('alert'),
    warningThresholdPct: doublePrecision('warning_threshold_pct').notNull().default(80),
    /** 'YYYY-MM' (UTC) that currentMonthCostUsd belongs to; a new month starts from zero. */
    spendMonth: text('spend_month').notNull().default(sql`to_char(now() at time zone 'utc', 'YYYY-MM')`),
    currentMonthCostUsd: usd('current_month_cost_usd').notNull().default(0),
    /**
     * Bumped by every spend accrual, in the same UPDATE: the version of (spendMonth,
     * currentMonthCostUsd) that the shared spend counter keeps the newest of (docs/decisions.md,
     * "Spend counter").
     */
    spendSeq: bigint('spend_seq', { mode: 'number' }).notNull().default(0),
    /** Month in which budget_warning / budget_exceeded were last emitted (once a month each). */
    budgetWarnedMonth: text('budget_warned_month'),
    budgetExceededMonth: text('budget_exceeded_month'),
    /** Traces ingested so far, and the exponentially weighted recent error rate behind healthStatus. */
    traceCount: bigint('trace_count', { mode: 'number' }).notNull().default(0),
    errorRateEwma: doublePrecision('error_rate_ewma').notNull().default(0),
    tags: text('tags').array().notNull().default([]),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    ...timestampColumns(),
    createdBy: text('created_by'),
  },
  (t) => [
    tenantPrimaryKey(t),
    // Registration conflict (409) and ingest's lookup by external agent id.
    uniqueIndex('agents_org_agent_id_uq').on(t.organizationId, t.agentId),
    // List filters by status/environment and the organization-wide kill switch.
    index('agents_org_status_env_idx').on(t.organizationId, t.status, t.environment),
    // The `tag` filter (tags @> array[tag]).
    index('agents_tags_gin').using('gin', t.tags),
  ],
);
