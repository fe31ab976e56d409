/** Request and response shapes of /notification-channels, and the message that `notify` delivers. */
import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { booleanQuery, jsonObject, pagination, str } from '../../http/validation.js';
import { CHANNEL_TYPES } from './configuration.js';

export const channelTypeEnum = z.enum(CHANNEL_TYPES);

export const notificationChannelSchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    channelType: channelTypeEnum,
    configuration: z
      .record(z.string(), z.unknown())
      .describe('Per channelType: email `{ recipients }`, slack `{ webhookUrl }`, pagerduty `{ routing_key }`, webhook `{ url, secret }`. Secrets are masked (`…` and the last 4 characters) on every answer but the create response.'),
    isActive: z.boolean(),
    createdBy: z.string(),
    lastDeliveryAt: isoDateTimeOut().nullable().describe('Last successful delivery through the job runner'),
    lastFailureAt: isoDateTimeOut().nullable(),
    lastFailureReason: z.string().nullable().describe('Why the last failed delivery attempt failed (no payload, no secret)'),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
  })
  .meta({ id: 'NotificationChannel' });
export type NotificationChannel = z.infer<typeof notificationChannelSchema>;

const fields = {
  name: str(1, 255),
  description: str(0, 1000).nullable(),
  channelType: channelTypeEnum,
  configuration: jsonObject(4, 200),
  isActive: z.boolean(),
};

export const createNotificationChannelInput = z
  .object({
    name: fields.name,
    description: fields.description.optional(),
    channelType: fields.channelType,
    configuration: fields.configuration.describe('Validated for the channelType (422 naming `configuration.<field>`). A webhook without `secret` gets a generated one, returned once in the create response.'),
    isActive: fields.isActive.default(true),
  })
  .meta({ id: 'CreateNotificationChannelInput' });
export type CreateNotificationChannelInput = z.infer<typeof createNotificationChannelInput>;

export const updateNotificationChannelInput = z
  .object({
    name: fields.name.optional(),
    description: fields.description.optional(),
    channelType: fields.channelType.optional(),
    configuration: fields.configuration.optional().describe('Replaces the whole configuration. A masked secret sent back as read keeps the stored one; a webhook configuration without `secret` keeps its secret.'),
    isActive: fields.isActive.optional(),
  })
  .meta({ id: 'UpdateNotificationChannelInput' });
export type UpdateNotificationChannelInput = z.infer<typeof updateNotificationChannelInput>;

export const listNotificationChannelsQuery = z.object({
  ...pagination,
  channelType: channelTypeEnum.optional(),
  isActive: booleanQuery.optional(),
});
export type ListNotificationChannelsQuery = z.infer<typeof listNotificationChannelsQuery>;

export const testResultSchema = z
  .object({
    success: z.boolean(),
    statusCode: z.number().int().optional().describe("The target's HTTP status (absent for email and when no answer came)"),
    error: z.string().optional().describe('`<kind>: <message>` when the test failed; kinds: http_status, invalid_url, private_target, dns, refused, timeout, tls, network, smtp, not_configured'),
  })
  .meta({ id: 'NotificationChannelTestResult' });
export type TestResult = z.infer<typeof testResultSchema>;

export const SEVERITIES = ['info', 'warning', 'critical'] as const;

/**
 * What `notify` delivers (alerts fill it): `dedupKey` is stable per alert (PagerDuty's dedup_key;
 * with the action, the job's idempotency key), `action` resolve closes what trigger opened.
 */
export const notificationMessageSchema = z.strictObject({
  dedupKey: str(1, 255),
  title: str(1, 255),
  body: str(0, 10_000),
  severity: z.enum(SEVERITIES),
  action: z.enum(['trigger', 'resolve']),
  link: z.url().max(2000).optional(),
  agentId: z.uuid().optional(),
  data: jsonObject(8, 1000).optional(),
});
export type NotificationMessage = z.infer<typeof notificationMessageSchema>;
