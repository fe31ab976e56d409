import { sql } from 'drizzle-orm';
import { boolean, foreignKey, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAtColumn, tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';

/**
 * Webhook endpoints (docs/decisions.md, "Webhooks"). `secret` is the signing secret itself
 * (`whsec_` + base64 of 32 bytes): the worker needs it to compute HMACs, so it cannot be hashed.
 * After a rotation `previous_secret` signs too until `previous_secret_expires_at`. `lane_owner` and
 * `lane_until` are the per-webhook delivery lease: one worker at a time drains a webhook, in event order.
 * No index beyond the key: the list is ordered by id (UUIDv7, creation order) within one organization,
 * and the dispatcher reads an organization's active webhooks, a handful of rows.
 */
export const webhooks = pgTable(
  'webhooks',
  {
    ...tenantColumns(),
    name: text('name').notNull(),
    description: text('description'),
    url: text('url').notNull(),
    eventTypes: text('event_types').array().notNull(),
    agentIds: uuid('agent_ids').array(),
    isActive: boolean('is_active').notNull().default(true),
    maxRetries: integer('max_retries').notNull().default(5),
    retryBackoffSeconds: integer('retry_backoff_seconds').notNull().default(60),
    timeoutSeconds: integer('timeout_seconds').notNull().default(30),
    customHeaders: jsonb('custom_headers').$type<Record<string, string>>().notNull().default({}),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    successCount: integer('success_count').notNull().default(0),
    failureCount: integer('failure_count').notNull().default(0),
    lastTriggeredAt: timestamp('last_triggered_at', { withTimezone: true }),
    lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
    lastFailureAt: timestamp('last_failure_at', { withTimezone: true }),
    lastFailureReason: text('last_failure_reason'),
    /** First failed attempt since the last success: every attempt failing for 5 days disables the webhook. */
    failingSince: timestamp('failing_since', { withTimezone: true }),
    laneOwner: text('lane_owner'),
    laneUntil: timestamp('lane_until', { withTimezone: true }),
    tags: text('tags').array(),
    notes: text('notes'),
    createdBy: text('created_by').notNull(),
    ...timestampColumns(),
  },
  (t) => [tenantPrimaryKey(t)],
);

/**
 * One row per (event, webhook, series): the delivery state of an event to one destination (Svix's
 * message-destination). `body` and `idempotency_key` are the outbox event's, copied so that retries and
 * redeliveries send exactly the same bytes. A redelivery is a new series of the same event.
 */
export const webhookMessages = pgTable(
  'webhook_messages',
  {
    ...tenantColumns(),
    webhookId: uuid('webhook_id').notNull(),
    eventId: uuid('event_id').notNull(),
    eventType: text('event_type').notNull(),
    body: text('body').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    series: integer('series').notNull().default(1),
    /** pending → succeeded | failed (retries exhausted, 410, or the webhook disabled). */
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull(),
    lastError: text('last_error'),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    foreignKey({ columns: [t.organizationId, t.webhookId], foreignColumns: [webhooks.organizationId, webhooks.id], name: 'webhook_messages_webhook_fk' }).onDelete('cascade'),
    // A lane drains its webhook's pending messages in event order (event ids are UUIDv7, creation order).
    index('webhook_messages_pending_idx').on(t.organizationId, t.webhookId, t.eventId, t.series).where(sql`${t.status} = 'pending'`),
    // One message per event, webhook and series: a second dispatch of an event cannot deliver it twice.
    uniqueIndex('webhook_messages_event_uq').on(t.organizationId, t.webhookId, t.eventId, t.series),
  ],
);

/** One row per delivery attempt (the spec's WebhookDelivery); the payload is the message's body. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    ...tenantColumns(),
    webhookId: uuid('webhook_id').notNull(),
    messageId: uuid('message_id').notNull(),
    eventId: uuid('event_id').notNull(),
    eventType: text('event_type').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    attemptNumber: integer('attempt_number').notNull(),
    statusCode: integer('status_code'),
    responseBody: text('response_body'),
    success: boolean('success').notNull(),
    errorMessage: text('error_message'),
    durationMs: integer('duration_ms'),
    createdAt: createdAtColumn(),
  },
  (t) => [
    tenantPrimaryKey(t),
    foreignKey({ columns: [t.organizationId, t.messageId], foreignColumns: [webhookMessages.organizationId, webhookMessages.id], name: 'webhook_deliveries_message_fk' }).onDelete('cascade'),
    // GET /webhooks/{id}/deliveries: a webhook's most recent attempts first.
    index('webhook_deliveries_recent_idx').on(t.organizationId, t.webhookId, t.createdAt),
    // A message's attempts: the ON DELETE CASCADE of retention (and of deleting a webhook) finds them
    // here instead of scanning the organization's attempts once per deleted message.
    index('webhook_deliveries_message_idx').on(t.organizationId, t.messageId),
  ],
);
