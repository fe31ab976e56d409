/**
 * HTTP routes for /policies: CRUD. The enforcement routes (/policies/enforce, /policies/test,
 * /policies/decisions, /policies/stats) belong in this plugin too, next to the list (Fastify
 * matches their static segments before `/policies/:id`).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import { createPolicyInput, listPoliciesQuery, policySchema, updatePolicyInput } from './schemas.js';
import * as svc from './service.js';

const tags = ['Policies'];
const read = { scope: 'policy:read' as const };
const write = { scope: 'policy:write' as const };

/** Registers the /policies routes. */
export async function policyRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;
  // Every committed change forgets the organization's active policies on every instance.
  const changed = app.deps.afterCommit.wrap('policies: active-policy cache', (orgId: string) => app.deps.services.policies.invalidate(orgId));

  r.get('/policies', {
    config: { auth: read },
    schema: { tags, operationId: 'policies.list', summary: 'List policies in evaluation order', description: 'Ordered by ascending `priority`, then id (the order enforcement runs them in). Filters: policyType, isActive, enforcementMode, agentId (policies naming the agent in `agentId` or `appliesToAgents`) and a text `search` over name and description.', querystring: listPoliciesQuery, response: { 200: pageSchema(policySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listPolicies(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/policies', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.create', summary: 'Create a policy', description: '`ruleDefinition` is validated for the `policyType` (422 naming `ruleDefinition.<path>`); `agentId` and `appliesToAgents` must name agents of the organization; `maxRequests` and `timeWindowSeconds` go together. Takes effect for enforcement at once on every instance. Audited (`policy.create`).', body: createPolicyInput, response: { 201: dataSchema(policySchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createPolicy(db, auditContext(req), req.body, changed))));

  r.get('/policies/:id', {
    config: { auth: read },
    schema: { tags, operationId: 'policies.get', summary: 'Get a policy', description: 'A policy of your organization (any other id is 404).', params: idParams, response: { 200: dataSchema(policySchema), ...errorResponses } },
  }, async (req) => one(svc.policyView(await svc.getPolicy(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/policies/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.update', summary: 'Update a policy', description: 'Accepts every CreatePolicyInput field; only the given ones change. A new `policyType` needs a `ruleDefinition` valid for it: without one in the body, the stored ruleDefinition must fit the new type (422 otherwise). A request that changes nothing writes no audit entry. Audited (`policy.update`).', params: idParams, body: updatePolicyInput, response: { 200: dataSchema(policySchema), ...errorResponses } },
  }, async (req) => one(await svc.updatePolicy(db, auditContext(req), req.params.id, req.body, changed)));

  r.delete('/policies/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.delete', summary: 'Delete a policy', description: 'Deletes the policy for good; enforcement stops using it at once. To keep it but stop enforcing it, PATCH `isActive: false`. Audited (`policy.delete`, with the policy as it was).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deletePolicy(db, auditContext(req), req.params.id, changed);
    return reply.code(204).send(null);
  });
}
