import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { createdAtColumn, tenantColumns, tenantPrimaryKey } from './columns.js';

/**
 * Outbound events, written in the same transaction as the change that causes them.
 * `body` is the exact delivery body; `idempotencyKey` is fixed at creation.
 */
export const outboxEvents = pgTable(
  'outbox_events',
  {
    ...tenantColumns(),
    type: text('type').notNull(),
    agentId: uuid('agent_id'),
    data: jsonb('data').notNull(),
    body: text('body').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    availableAt: timestamp('available_at', { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp('processed_at', { withTimezone: true }),
    lastError: text('last_error'),
    createdAt: createdAtColumn(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // Workers claim due pending events with FOR UPDATE SKIP LOCKED in this order.
    index('outbox_pending_idx').on(t.availableAt).where(sql`${t.status} = 'pending'`),
    index('outbox_org_created_idx').on(t.organizationId, t.createdAt),
  ],
);
