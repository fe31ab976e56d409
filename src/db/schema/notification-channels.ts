import { boolean, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';

/**
 * Notification channels: where alerts are sent (email, Slack, PagerDuty, a signed webhook).
 * `configuration` is validated per `channelType` by the notification-channels service and holds
 * the channel's secrets in full (Slack webhook URL, PagerDuty routing key, webhook signing secret):
 * the API masks them on every read after creation (docs/decisions.md, "Notification channels").
 */
export const notificationChannels = pgTable(
  'notification_channels',
  {
    ...tenantColumns(),
    name: text('name').notNull(),
    description: text('description'),
    channelType: text('channel_type').notNull(),
    configuration: jsonb('configuration').$type<Record<string, unknown>>().notNull(),
    isActive: boolean('is_active').notNull().default(true),
    createdBy: text('created_by').notNull(),
    lastDeliveryAt: timestamp('last_delivery_at', { withTimezone: true }),
    lastFailureAt: timestamp('last_failure_at', { withTimezone: true }),
    lastFailureReason: text('last_failure_reason'),
    ...timestampColumns(),
  },
  (t) => [
    tenantPrimaryKey(t),
    // GET /notification-channels, newest first.
    index('notification_channels_created_idx').on(t.organizationId, t.createdAt),
  ],
);
