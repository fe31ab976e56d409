/**
 * HTTP routes for /notification-channels (contract.md "Other resources"): scope `admin`, hence role
 * admin, for reads and changes alike (docs/decisions.md, "Notification channels").
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import {
  createNotificationChannelInput,
  listNotificationChannelsQuery,
  notificationChannelSchema,
  testResultSchema,
  updateNotificationChannelInput,
} from './schemas.js';
import * as svc from './service.js';

const tags = ['Notification channels'];
const admin = { scope: 'admin' as const };

/** Registers the /notification-channels routes. */
export async function notificationChannelRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, clock, config } = app.deps;
  const rules = { allowPrivate: config.allowPrivateTargets };
  const sender = () => app.deps.services['notification-channels'].sender;
  const one200 = { 200: dataSchema(notificationChannelSchema), ...errorResponses };

  r.get('/notification-channels', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.list', summary: 'List notification channels, newest first', description: 'Filters: `channelType`, `isActive`. Secrets in `configuration` are masked.', querystring: listNotificationChannelsQuery, response: { 200: pageSchema(notificationChannelSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listChannels(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/notification-channels', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.create', summary: 'Create a notification channel', description: '`configuration` per `channelType`: email `{ recipients: [email] }` (1-50), slack `{ webhookUrl }` (https), pagerduty `{ routing_key }` (32 characters), webhook `{ url, secret? }` (http or https; a `whsec_` secret is generated when absent). URLs to loopback or private addresses are refused unless private targets are allowed. The answer shows the configuration in full, the only time it does. Audited (`notification_channel.create`, secrets masked).', body: createNotificationChannelInput, response: { 201: dataSchema(notificationChannelSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createChannel(db, auditContext(req), req.body, rules))));

  r.get('/notification-channels/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.get', summary: 'Get a notification channel', description: "Secrets in `configuration` are masked. Another organization's channel is 404.", params: idParams, response: one200 },
  }, async (req) => one(svc.channelView(await svc.getChannel(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/notification-channels/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.update', summary: 'Update a notification channel', description: 'Only the given fields change; `configuration` is replaced as a whole and validated for the channel type. A masked secret sent back as read keeps the stored one; a webhook configuration without `secret` keeps its secret. A new `channelType` needs a `configuration`. Audited (`notification_channel.update`, secrets masked).', params: idParams, body: updateNotificationChannelInput, response: one200 },
  }, async (req) => one(await svc.updateChannel(db, auditContext(req), req.params.id, req.body, rules)));

  r.delete('/notification-channels/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.delete', summary: 'Delete a notification channel', description: 'Deletes the channel for good; deliveries still queued for it are dropped. Audited (`notification_channel.delete`).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteChannel(db, auditContext(req), req.params.id);
    return reply.code(204).send(null);
  });

  r.post('/notification-channels/:id/test', {
    config: { auth: admin },
    schema: { tags, operationId: 'notificationChannels.test', summary: 'Send a test notification', description: 'Sends a test message now (active or inactive channel), bounded by NOTIFICATION_TIMEOUT_MS, and answers 200 with the outcome: `success`, the HTTP `statusCode` of the target when it answered, and `error` (`<kind>: <message>`) when it failed. A failing target is never an error status. A PagerDuty test triggers and then resolves its own dedup_key.', params: idParams, response: { 200: dataSchema(testResultSchema), ...errorResponses } },
  }, async (req) => one(await svc.testChannel(db, sender(), principalOf(req).organizationId, req.params.id, clock.now())));
}
