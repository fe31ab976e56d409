import { sql, type SQL } from 'drizzle-orm';
import { boolean, customType, foreignKey, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { tenantColumns, tenantPrimaryKey, timestampColumns, usd } from './columns.js';

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

/**
 * Characters of each field fed to the search vector: the span name and error message as sent
 * (validation caps them at 255 and 10,000), and the first 50,000 characters of the string values
 * of input and of output. Words past these bounds are not searchable.
 */
export const SEARCH_TEXT_LIMITS = { spanName: 1_000, errorMessage: 10_000, payload: 50_000 } as const;

/** Execution traces (spans). Upserted by (organization, traceId). */
export const traces = pgTable(
  'traces',
  {
    // No foreign key to organizations: a per-row check costs ingest ~17 % (measured), and the agent
    // foreign key (organization_id, agent_id) already ties every trace to an agent of this
    // organization, through which deleting an organization still cascades.
    ...tenantColumns({ references: false }),
    traceId: text('trace_id').notNull(),
    agentId: uuid('agent_id').notNull(),
    parentTraceId: text('parent_trace_id'),
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    durationMs: integer('duration_ms'),
    status: text('status').notNull(),
    input: jsonb('input'),
    output: jsonb('output'),
    errorMessage: text('error_message'),
    errorType: text('error_type'),
    modelName: text('model_name'),
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    totalTokens: integer('total_tokens'),
    costUsd: usd('cost_usd'),
    /** True when costUsd was estimated from the price table rather than sent. */
    costEstimated: boolean('cost_estimated').notNull().default(false),
    environment: text('environment').notNull(),
    version: text('version'),
    tags: text('tags').array(),
    metadata: jsonb('metadata'),
    userId: text('user_id'),
    sessionId: text('session_id'),
    spanType: text('span_type').notNull().default('custom'),
    spanName: text('span_name'),
    flagged: boolean('flagged').notNull().default(false),
    flagReason: text('flag_reason'),
    flaggedAt: timestamp('flagged_at', { withTimezone: true }),
    flaggedBy: text('flagged_by'),
    // Full-text search over span name, error message and the string values of input/output, each
    // cut to a bound (SEARCH_TEXT_LIMITS) so a 2 MiB item costs ingest no more than a bounded parse.
    // trace_search_text() is an IMMUTABLE SQL function created by migration 0002 (docs/decisions.md).
    searchVector: tsvector('search_vector').generatedAlwaysAs(
      (): SQL =>
        sql.raw(
          `to_tsvector('simple', left(coalesce(span_name, ''), ${SEARCH_TEXT_LIMITS.spanName}) || ' ' || left(coalesce(error_message, ''), ${SEARCH_TEXT_LIMITS.errorMessage}) || ' ' || coalesce(trace_search_text(input, ${SEARCH_TEXT_LIMITS.payload}), '') || ' ' || coalesce(trace_search_text(output, ${SEARCH_TEXT_LIMITS.payload}), ''))`,
        ),
    ),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    foreignKey({ name: 'traces_agent_fk', columns: [t.organizationId, t.agentId], foreignColumns: [agents.organizationId, agents.id] }).onDelete('cascade'),
    // The ingest upsert key.
    uniqueIndex('traces_org_trace_id_uq').on(t.organizationId, t.traceId),
    // DESC NULLS FIRST is what `ORDER BY x DESC` means: any other null order and the planner cannot
    // read the sort from the index (drizzle's .desc() alone says NULLS LAST).
    // GET /traces newest first (the sort order itself, so a LIMIT stops early, also under a search
    // filter); startTime/endTime; stats over the last N hours; export keyset on (timestamp, id).
    index('traces_org_ts_id_idx').on(t.organizationId, t.timestamp.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // GET /traces?agentId= (with or without status) newest first; agent stats (24h/7d/30d). The
    // trailing status lets counting agentId+status matches be an index-only scan.
    index('traces_org_agent_ts_id_idx').on(t.organizationId, t.agentId, t.timestamp.desc().nullsFirst(), t.id.desc().nullsFirst(), t.status),
    // GET /traces?status= across agents, and agentId+status when the status is the rarer filter.
    index('traces_org_status_ts_id_idx').on(t.organizationId, t.status, t.timestamp.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // sessionId filter and relatedTraces by session.
    index('traces_org_session_idx').on(t.organizationId, t.sessionId).where(sql`${t.sessionId} is not null`),
    // /children, /tree and relatedTraces by parent.
    index('traces_org_parent_idx').on(t.organizationId, t.parentTraceId).where(sql`${t.parentTraceId} is not null`),
    // GET /traces?search= (full text).
    index('traces_search_gin').using('gin', t.searchVector),
  ],
);
