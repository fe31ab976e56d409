/** Zod schemas of the Webhook and WebhookDelivery resources and their inputs (spec: Webhook; bounds in docs/decisions.md, "Webhooks"). */
import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { str } from '../../http/validation.js';
import { EVENT_TYPES } from '../events/outbox.js';

export const MAX_CUSTOM_HEADERS = 20;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
// Visible ASCII, space and tab: no CR/LF (header injection) and nothing Node refuses to send.
const HEADER_VALUE = /^[\t\x20-\x7e]{0,1000}$/;

/** Header names customHeaders cannot set: the signature, identification and framing headers we send. */
export function reservedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('x-service-') || n.startsWith('webhook-') || ['content-type', 'content-length', 'user-agent', 'host', 'connection', 'transfer-encoding', 'expect', 'upgrade', 'te', 'trailer', 'keep-alive'].includes(n);
}

const customHeaders = z.record(z.string(), z.string()).superRefine((h, ctx) => {
  const names = Object.keys(h);
  if (names.length > MAX_CUSTOM_HEADERS) {
    ctx.addIssue({ code: 'custom', message: `at most ${MAX_CUSTOM_HEADERS} headers` });
    return;
  }
  for (const name of names) {
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name of 1-100 token characters' });
    else if (reservedHeader(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the service and cannot be overridden' });
    else if (!HEADER_VALUE.test(h[name])) ctx.addIssue({ code: 'custom', path: [name], message: 'must be at most 1000 printable ASCII characters' });
  }
});

const eventTypes = z
  .array(z.enum(EVENT_TYPES))
  .min(1)
  .max(EVENT_TYPES.length)
  .refine((a) => new Set(a).size === a.length, 'must not repeat an event type');

const fields = {
  name: str(1, 255),
  description: str(0, 2000).nullable(),
  url: str(1, 2048),
  eventTypes,
  agentIds: z.array(z.uuid()).min(1).max(1000).nullable(),
  isActive: z.boolean(),
  maxRetries: z.number().int().min(0).max(10),
  retryBackoffSeconds: z.number().int().min(1).max(3600),
  timeoutSeconds: z.number().int().min(1).max(60),
  customHeaders,
  tags: z.array(str(1, 100)).max(50).nullable(),
  notes: str(0, 10_000).nullable(),
};

export const createWebhookInput = z
  .object({
    name: fields.name,
    url: fields.url,
    eventTypes: fields.eventTypes,
    description: fields.description.optional(),
    agentIds: fields.agentIds.optional(),
    maxRetries: fields.maxRetries.default(5),
    retryBackoffSeconds: fields.retryBackoffSeconds.default(60),
    timeoutSeconds: fields.timeoutSeconds.default(30),
    customHeaders: fields.customHeaders.default({}),
    tags: fields.tags.optional(),
    notes: fields.notes.optional(),
  })
  .meta({ id: 'CreateWebhookInput' });

export const updateWebhookInput = z
  .object(Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, s.optional()])) as { [K in keyof typeof fields]: z.ZodOptional<(typeof fields)[K]> })
  .meta({ id: 'UpdateWebhookInput' });

export const webhookSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    url: z.string(),
    eventTypes: z.array(z.enum(EVENT_TYPES)),
    agentIds: z.array(z.uuid()).nullable(),
    isActive: z.boolean(),
    maxRetries: z.number().int(),
    retryBackoffSeconds: z.number().int(),
    timeoutSeconds: z.number().int(),
    customHeaders: z.record(z.string(), z.string()),
    successCount: z.number().int(),
    failureCount: z.number().int(),
    lastTriggeredAt: isoDateTimeOut().nullable(),
    lastSuccessAt: isoDateTimeOut().nullable(),
    lastFailureAt: isoDateTimeOut().nullable(),
    lastFailureReason: z.string().nullable(),
    tags: z.array(z.string()).nullable(),
    notes: z.string().nullable(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
    createdBy: z.string(),
  })
  .meta({ id: 'Webhook' });

export const createdWebhookSchema = webhookSchema
  .extend({ secret: z.string().describe('The signing secret (`whsec_` + base64 of 32 bytes), returned only here and by rotate-secret') })
  .meta({ id: 'WebhookWithSecret' });

export const rotatedSecretSchema = z.object({ id: z.uuid(), secret: z.string() }).meta({ id: 'WebhookSecret' });

export const testResultSchema = z
  .object({
    success: z.boolean(),
    statusCode: z.number().int().describe("The target's HTTP status; 0 when it gave no answer (see error)"),
    statusText: z.string(),
    error: z.string().optional().describe('Why the test failed: a non-2xx status, or no answer (timeout, refused, DNS, TLS, private target)'),
    errorKind: z.enum(['http_status', 'invalid_url', 'private_target', 'dns', 'refused', 'timeout', 'tls', 'network']).optional(),
    durationMs: z.number().optional(),
  })
  .meta({ id: 'WebhookTestResult' });

export const deliverySchema = z
  .object({
    id: z.uuid(),
    webhookId: z.uuid(),
    eventId: z.uuid(),
    eventType: z.string(),
    payload: z.record(z.string(), z.unknown()),
    statusCode: z.number().int().nullable(),
    responseBody: z.string().nullable(),
    success: z.boolean(),
    attemptNumber: z.number().int(),
    errorMessage: z.string().nullable(),
    idempotencyKey: z.string(),
    durationMs: z.number().int().nullable(),
    createdAt: isoDateTimeOut(),
  })
  .meta({ id: 'WebhookDelivery' });

export const redeliverySchema = z
  .object({
    webhookId: z.uuid(),
    eventId: z.uuid(),
    idempotencyKey: z.string(),
    series: z.number().int().describe('The attempt series of this redelivery (the first delivery is series 1)'),
    status: z.literal('pending'),
  })
  .meta({ id: 'WebhookRedelivery' });

export const listWebhooksQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});

export const listDeliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});

export const deliveryParams = z.object({ id: z.uuid(), deliveryId: z.uuid() });

export type Webhook = z.infer<typeof webhookSchema>;
export type CreateWebhookInput = z.infer<typeof createWebhookInput>;
export type UpdateWebhookInput = z.infer<typeof updateWebhookInput>;
export type WebhookDelivery = z.infer<typeof deliverySchema>;
export type TestResult = z.infer<typeof testResultSchema>;
