/** HTTP routes for /access-grants (contract.md "Access grants"): reads need policy:read, changes policy:write. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { conflictResponse, dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import { accessGrantSchema, createAccessGrantInput, listAccessGrantsQuery } from './schemas.js';
import * as svc from './service.js';

const tags = ['Access grants'];
const read = { scope: 'policy:read' as const };
const write = { scope: 'policy:write' as const };

/** Registers the /access-grants routes. */
export async function accessGrantRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, clock } = app.deps;
  const one200 = { 200: dataSchema(accessGrantSchema), ...errorResponses };

  r.get('/access-grants', {
    config: { auth: read },
    schema: { tags, operationId: 'accessGrants.list', summary: 'List access grants, newest first', description: 'Filters: `agentId`, `status`. A pending or approved grant past its `expiresAt` is listed (and filtered) as `expired`.', querystring: listAccessGrantsQuery, response: { 200: pageSchema(accessGrantSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listAccessGrants(db, principalOf(req).organizationId, req.query, clock.now());
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/access-grants', {
    config: { auth: write },
    schema: { tags, operationId: 'accessGrants.create', summary: 'Grant an agent access, active at once', description: 'Creates an approved grant (decided by the caller) for actions matching the `action` glob, and resources matching `resource` when given. Give exactly one of `expiresAt` and `ttlSeconds` (60 s to 365 days). An `agentId` that is not an agent of the organization is 422. Audited (`access_grant.create`).', body: createAccessGrantInput, response: { 201: dataSchema(accessGrantSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createAccessGrant(db, auditContext(req), req.body))));

  r.get('/access-grants/:id', {
    config: { auth: read },
    schema: { tags, operationId: 'accessGrants.get', summary: 'Get an access grant', description: "Another organization's grant is 404.", params: idParams, response: one200 },
  }, async (req) => one(svc.accessGrantView(await svc.getAccessGrant(db, principalOf(req).organizationId, req.params.id), clock.now())));

  r.post('/access-grants/:id/approve', {
    config: { auth: write },
    schema: { tags, operationId: 'accessGrants.approve', summary: 'Approve a pending access grant', description: 'Only a pending grant (409 INVALID_TRANSITION otherwise); the principal that requested it may not approve it (403). The grant lasts as long as requested, counted from the approval. Audited (`access_grant.approve`).', params: idParams, response: { ...one200, ...conflictResponse } },
  }, async (req) => one(await svc.approveAccessGrant(db, auditContext(req), req.params.id)));

  r.post('/access-grants/:id/deny', {
    config: { auth: write },
    schema: { tags, operationId: 'accessGrants.deny', summary: 'Deny a pending access grant', description: 'Only a pending grant (409 INVALID_TRANSITION otherwise). Audited (`access_grant.deny`).', params: idParams, response: { ...one200, ...conflictResponse } },
  }, async (req) => one(await svc.denyAccessGrant(db, auditContext(req), req.params.id)));

  r.delete('/access-grants/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'accessGrants.revoke', summary: 'Revoke an approved access grant', description: 'Only an approved, unexpired grant (409 INVALID_TRANSITION otherwise); it stops allowing at once and is kept with status `revoked`. Answers the grant. Audited (`access_grant.revoke`).', params: idParams, response: { ...one200, ...conflictResponse } },
  }, async (req) => one(await svc.revokeAccessGrant(db, auditContext(req), req.params.id)));
}
