/** HTTP routes for /saved-filters: each principal sees and changes only its own filters. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import { createSavedFilterInput, listSavedFiltersQuery, savedFilterSchema, updateSavedFilterInput } from './schemas.js';
import * as svc from './service.js';

const tags = ['Saved filters'];

/** The owner of the request's filters: the principal (user, or API key) within its organization. */
const ownerOf = (req: FastifyRequest): svc.Owner => {
  const p = principalOf(req);
  return { organizationId: p.organizationId, userId: p.userId };
};

/** Registers the /saved-filters routes; default route auth: viewer reads, developer changes (contract.md). */
export async function savedFilterRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;

  r.get('/saved-filters', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'savedFilters.list', summary: 'List your saved filters, newest first', description: 'Only the filters of the calling principal (user or API key); other principals never see them.', querystring: listSavedFiltersQuery, response: { 200: pageSchema(savedFilterSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listSavedFilters(db, ownerOf(req), req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/saved-filters', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'savedFilters.create', summary: 'Save a filter (snake_case input)', description: 'Input fields are snake_case (`resource_type`, `filter_config`). The filter belongs to the calling principal. Audited (`saved_filter.create`).', body: createSavedFilterInput, response: { 201: dataSchema(savedFilterSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createSavedFilter(db, auditContext(req), req.body))));

  r.get('/saved-filters/:id', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'savedFilters.get', summary: 'Get one of your saved filters', description: "Another principal's filter is 404, as if it did not exist.", params: idParams, response: { 200: dataSchema(savedFilterSchema), ...errorResponses } },
  }, async (req) => one(svc.savedFilterView(await svc.getSavedFilter(db, ownerOf(req), req.params.id))));

  r.put('/saved-filters/:id', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'savedFilters.update', summary: 'Update a saved filter (snake_case input; only given fields change)', description: 'Despite PUT, only the given fields change. Audited (`saved_filter.update`).', params: idParams, body: updateSavedFilterInput, response: { 200: dataSchema(savedFilterSchema), ...errorResponses } },
  }, async (req) => one(await svc.updateSavedFilter(db, auditContext(req), req.params.id, req.body)));

  r.delete('/saved-filters/:id', {
    config: { auth: { anyPrincipal: true } },
    schema: { tags, operationId: 'savedFilters.delete', summary: 'Delete a saved filter permanently', description: 'Permanent. Audited (`saved_filter.delete`).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteSavedFilter(db, auditContext(req), req.params.id);
    return reply.code(204).send(null);
  });
}
