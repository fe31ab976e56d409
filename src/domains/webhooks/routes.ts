/** HTTP routes for /webhooks (ADMIN role for every operation; spec "Webhooks"). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { conflictResponse, dataSchema, errorResponses, notFoundResponse, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import {
  createdWebhookSchema,
  createWebhookInput,
  deliveryParams,
  deliverySchema,
  listDeliveriesQuery,
  listWebhooksQuery,
  redeliverySchema,
  rotatedSecretSchema,
  testResultSchema,
  updateWebhookInput,
  webhookSchema,
} from './schemas.js';
import * as svc from './service.js';

const tags = ['Webhooks'];
const admin = { scope: 'admin' as const };

/** Registers the /webhooks routes. */
export async function webhookRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;
  const hooks = app.deps.services.webhooks;
  // Every committed change forgets the organization's subscriptions on every instance.
  const changed = app.deps.afterCommit.wrap('webhooks: subscriptions cache', (orgId: string) => hooks.invalidate(orgId));

  r.get('/webhooks', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.list', summary: 'List webhooks', description: 'Newest first. Secrets are never listed.', querystring: listWebhooksQuery, response: { 200: pageSchema(webhookSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listWebhooks(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/webhooks', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.create', summary: 'Create a webhook', description: 'The answer carries the signing secret (`whsec_` + base64 of 32 bytes): the only time it is shown, besides rotate-secret. `url` must be http(s) without credentials (and, in production, not a loopback or private address: checked again at every send, after DNS). `customHeaders` holds at most 20 headers and cannot set the signature, idempotency, `webhook-*`, Content-Type, User-Agent or Host headers. Audited (`webhook.create`, without the secret).', body: createWebhookInput, response: { 201: dataSchema(createdWebhookSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createWebhook(db, auditContext(req), req.body, hooks.allowPrivate, changed))));

  r.get('/webhooks/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.get', summary: 'Get a webhook', description: 'A webhook of your organization (any other id is 404), without its secret.', params: idParams, response: { 200: dataSchema(webhookSchema), ...errorResponses } },
  }, async (req) => one(svc.webhookView(await svc.getWebhook(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/webhooks/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.update', summary: 'Update a webhook', description: 'Only the given fields change. `isActive: true` on a disabled webhook resumes delivery and restarts its failure streak. A request that changes nothing writes no audit entry. Audited (`webhook.update`).', params: idParams, body: updateWebhookInput, response: { 200: dataSchema(webhookSchema), ...errorResponses } },
  }, async (req) => one(await svc.updateWebhook(db, auditContext(req), req.params.id, req.body, hooks.allowPrivate, changed)));

  r.delete('/webhooks/:id', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.delete', summary: 'Delete a webhook', description: 'Deletes the webhook for good, with its pending deliveries and delivery log. Audited (`webhook.delete`).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteWebhook(db, auditContext(req), req.params.id, changed);
    return reply.code(204).send(null);
  });

  r.post('/webhooks/:id/test', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.test', summary: 'Send a test payload', description: 'Sends one signed request with a `test` event now (not queued, not retried, not in the delivery log) and answers the target\'s HTTP status, or `statusCode: 0` with `error` and `errorKind` (timeout, refused, dns, tls, private_target, ...) when there was no answer. A non-2xx status is `success: false` with `errorKind: http_status`.', params: idParams, response: { 200: dataSchema(testResultSchema), ...errorResponses } },
  }, async (req) => one(await hooks.test(principalOf(req).organizationId, req.params.id)));

  r.get('/webhooks/:id/deliveries', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.listDeliveries', summary: "List a webhook's delivery attempts", description: 'Most recent attempts first; one entry per attempt (`attemptNumber` counts within a delivery series). `responseBody` is cut at 4 KiB.', params: idParams, querystring: listDeliveriesQuery, response: { 200: pageSchema(deliverySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listDeliveries(db, principalOf(req).organizationId, req.params.id, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/webhooks/:id/deliveries/:deliveryId/redeliver', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.redeliver', summary: 'Redeliver an event', description: 'Queues the event of this delivery attempt again as a new attempt series: same event id (`webhook-id`), same body and same idempotency key, with the webhook\'s retry rules. 404 when the delivery is not this webhook\'s; 409 when the webhook is inactive. Audited (`webhook.redeliver`).', params: deliveryParams, response: { 202: dataSchema(redeliverySchema), ...notFoundResponse, ...conflictResponse, ...errorResponses } },
  }, async (req, reply) => reply.code(202).send(one(await svc.redeliver(db, auditContext(req), req.params.id, req.params.deliveryId))));

  r.post('/webhooks/:id/rotate-secret', {
    config: { auth: admin },
    schema: { tags, operationId: 'webhooks.rotateSecret', summary: 'Rotate the signing secret', description: 'Answers the new secret, once. Deliveries are signed with both the new and the previous secret for `WEBHOOK_SECRET_GRACE_SECONDS` (default 24 h), so receivers can switch keys without losing events. Audited (`webhook.rotate_secret`, without secrets).', params: idParams, response: { 200: dataSchema(rotatedSecretSchema), ...errorResponses } },
  }, async (req) => one(await svc.rotateSecret(db, auditContext(req), req.params.id, hooks.graceSeconds)));
}
