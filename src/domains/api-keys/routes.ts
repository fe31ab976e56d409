/** HTTP routes for /api-keys (admin). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import { apiKeySchema, apiKeyWithSecretSchema, createApiKeyInput, listApiKeysQuery, updateApiKeyInput } from './schemas.js';
import * as svc from './service.js';

const tags = ['API keys'];
const auth = { scope: 'admin' as const };

export async function apiKeyRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;
  const invalidate = app.deps.afterCommit.wrap('auth: forget a changed key', (hash: string) => app.deps.auth.invalidateKey(hash));

  r.get('/api-keys', {
    config: { auth },
    schema: { tags, summary: 'List API keys', querystring: listApiKeysQuery, response: { 200: pageSchema(apiKeySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listApiKeys(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/api-keys', {
    config: { auth },
    schema: {
      tags,
      summary: 'Create an API key (the key is returned only in this response)',
      body: createApiKeyInput,
      response: { 201: dataSchema(apiKeyWithSecretSchema), ...errorResponses },
    },
  }, async (req, reply) => {
    const created = await svc.createApiKey(db, auditContext(req), principalOf(req).role === 'admin', req.body);
    return reply.code(201).send(one(created));
  });

  r.get('/api-keys/:id', {
    config: { auth },
    schema: { tags, summary: 'Get an API key', params: idParams, response: { 200: dataSchema(apiKeySchema), ...errorResponses } },
  }, async (req) => one(svc.apiKeyView(await svc.getApiKey(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/api-keys/:id', {
    config: { auth },
    schema: { tags, summary: 'Update an API key', params: idParams, body: updateApiKeyInput, response: { 200: dataSchema(apiKeySchema), ...errorResponses } },
  }, async (req) =>
    one(await svc.updateApiKey(db, auditContext(req), principalOf(req).role === 'admin', req.params.id, req.body, invalidate)));

  r.delete('/api-keys/:id', {
    config: { auth },
    schema: { tags, summary: 'Delete an API key (it stops working at once)', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteApiKey(db, auditContext(req), req.params.id, invalidate);
    return reply.code(204).send(null);
  });

  r.post('/api-keys/:id/rotate', {
    config: { auth },
    schema: {
      tags,
      summary: 'Replace the key string; the old one stops working at once',
      params: idParams,
      response: { 200: dataSchema(apiKeyWithSecretSchema), ...errorResponses },
    },
  }, async (req) => one(await svc.rotateApiKey(db, auditContext(req), req.params.id, invalidate)));
}
