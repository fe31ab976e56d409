/** HTTP routes for /api-keys (admin). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import type { RouteExample } from '../../http/openapi.js';
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
    schema: { tags, operationId: 'apiKeys.list', summary: 'List API keys', description: 'Keys of your organization; the secret is never returned here, only its prefix.', querystring: listApiKeysQuery, response: { 200: pageSchema(apiKeySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listApiKeys(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/api-keys', {
    config: { auth },
    schema: {
      tags,
      operationId: 'apiKeys.create', summary: 'Create an API key (the key is returned only in this response)', description: 'The `key` field of the response is the only time the secret is shown: store it. Only an admin may grant the `admin` scope. Audited (`api_key.create`).',
      body: createApiKeyInput,
      response: { 201: dataSchema(apiKeyWithSecretSchema), ...errorResponses },
      'x-example': {
        request: { name: 'CI ingest', environment: 'production', scopes: ['trace:write'] },
        response: { data: { id: '5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c', name: 'CI ingest', description: null, keyPrefix: 'svc_prod_AbC1dE', environment: 'production', scopes: ['trace:write'], agentId: null, expiresAt: null, lastUsedAt: null, usageCount: 0, isActive: true, ipAllowlist: null, createdAt: '2026-01-15T09:00:00.000Z', updatedAt: '2026-01-15T09:00:00.000Z', createdBy: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a', key: 'svc_prod_AbC1dEf2gHi3jKl4mNo5pQr6sTu7vWx8yZ' } },
      } satisfies RouteExample,
    },
  }, async (req, reply) => {
    const created = await svc.createApiKey(db, auditContext(req), principalOf(req).role === 'admin', req.body);
    return reply.code(201).send(one(created));
  });

  r.get('/api-keys/:id', {
    config: { auth },
    schema: { tags, operationId: 'apiKeys.get', summary: 'Get an API key', description: 'One key of your organization, without its secret.', params: idParams, response: { 200: dataSchema(apiKeySchema), ...errorResponses } },
  }, async (req) => one(svc.apiKeyView(await svc.getApiKey(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/api-keys/:id', {
    config: { auth },
    schema: { tags, operationId: 'apiKeys.update', summary: 'Update an API key', description: 'Only the given fields change; a change of scopes, IP allowlist, expiry or activity applies to the next request at once (the key cache is invalidated). Audited (`api_key.update`).', params: idParams, body: updateApiKeyInput, response: { 200: dataSchema(apiKeySchema), ...errorResponses } },
  }, async (req) =>
    one(await svc.updateApiKey(db, auditContext(req), principalOf(req).role === 'admin', req.params.id, req.body, invalidate)));

  r.delete('/api-keys/:id', {
    config: { auth },
    schema: { tags, operationId: 'apiKeys.delete', summary: 'Delete an API key (it stops working at once)', description: 'The key is revoked at once, on every instance. Audited (`api_key.delete`).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteApiKey(db, auditContext(req), req.params.id, invalidate);
    return reply.code(204).send(null);
  });

  r.post('/api-keys/:id/rotate', {
    config: { auth },
    schema: {
      tags,
      operationId: 'apiKeys.rotate', summary: 'Replace the key string; the old one stops working at once', description: 'Issues a new secret for the same key (same id and settings); the response shows it once. The old secret is refused from the next request on. Audited (`api_key.rotate`).',
      params: idParams,
      response: { 200: dataSchema(apiKeyWithSecretSchema), ...errorResponses },
    },
  }, async (req) => one(await svc.rotateApiKey(db, auditContext(req), req.params.id, invalidate)));
}
