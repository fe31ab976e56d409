/**
 * HTTP routes for /policies: CRUD. The enforcement routes (/policies/enforce, /policies/test,
 * /policies/decisions, /policies/stats) belong in this plugin too, next to the list (Fastify
 * matches their static segments before `/policies/:id`).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { performance } from 'node:perf_hooks';
import { conflictResponse, dataSchema, errorResponses, notFoundResponse, one, page, pageSchema, plainOkSerializer } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { idParams } from '../../http/validation.js';
import { createPolicyInput, listPoliciesQuery, policySchema, policyWithSecretSchema, testPolicyInput, updatePolicyInput } from './schemas.js';
import { ENFORCE_BODY_LIMIT_BYTES, enforceDecisionSchema, enforceRequestSchema } from './enforce-schemas.js';
import { createEnforceService } from './enforce.js';
import * as svc from './service.js';

const tags = ['Policies'];
const read = { scope: 'policy:read' as const };
const write = { scope: 'policy:write' as const };
// contract.md: enforce evaluates and changes no configuration, so any role with policy:read may
// call it, agent-scoped keys included (for their own agent); its own rate-limit class.
const enforceAuth = { scope: 'policy:read' as const, role: 'viewer' as const, agentKeys: true, rateLimit: 'enforce' as const };
const enforceHeaders = { 'x-response-headers': ['Server-Timing'], 'x-body-limit': ENFORCE_BODY_LIMIT_BYTES };

/** Registers the /policies routes. */
export async function policyRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;
  // Every committed change forgets the organization's active policies on every instance.
  const changed = app.deps.afterCommit.wrap('policies: active-policy cache', (orgId: string) => app.deps.services.policies.invalidate(orgId));
  const { services, clock, state, config } = app.deps;
  const enforcer = createEnforceService({
    db,
    state,
    clock,
    config,
    snapshot: (orgId) => services.policies.activeSnapshot(orgId),
    agent: (orgId, idOrExternal) => services.agents.forEnforcement(orgId, idOrExternal),
    monthSpend: (orgId, agentId) => services.agents.monthSpend(orgId, agentId),
    record: (input) => services.policyDecisions.record(input),
    log: app.log,
  });
  const who = (p: ReturnType<typeof principalOf>) => ({ organizationId: p.organizationId, userId: p.userId, ...(p.agentId ? { agentId: p.agentId } : {}) });

  r.post('/policies/enforce', {
    config: { auth: enforceAuth },
    bodyLimit: ENFORCE_BODY_LIMIT_BYTES,
    serializerCompiler: plainOkSerializer,
    schema: {
      tags,
      operationId: 'policies.enforce',
      summary: 'Decide whether an agent may take an action',
      description:
        'Call before every tool call, LLM call or data access. The agent is named by uuid or external `agentId`: a paused or archived agent is denied by the kill switch (at once on the instance that took the change, within the cache invalidation delay on others), and budget_cap reads the spend of every trace ingested so far (ingest moves the spend counter before it answers). Then every active policy in scope runs by ascending priority: block matches are `violations` (`deny`), warn and monitor matches `warnings`, an action_approval without a live grant is `require_approval` with the pending access grant in `accessGrantId` (one per agent, action, resource and parameters). `evaluationMs` and the `Server-Timing` header tell what governance cost. An unknown agent is 404, and so is another agent for an agent-scoped key. Every decision goes to the decision log; none writes an audit entry.',
      body: enforceRequestSchema,
      response: { 200: dataSchema(enforceDecisionSchema), ...errorResponses, ...notFoundResponse },
      ...enforceHeaders,
      'x-example': {
        request: { agentId: 'support-bot', environment: 'production', action: { type: 'tool_call', name: 'send_email', resource: 'mailto:customer@example.com' }, input: 'Please refund order 1182', estimatedCostUsd: 0.002 },
        response: { data: { decision: 'deny', allowed: false, violations: [{ policyId: '7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b', policyName: 'No outbound email', policyType: 'access_control', code: 'access.denied_action', message: 'Action "send_email" is denied', enforcementMode: 'block' }], warnings: [], evaluatedPolicies: 3, decisionId: '0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f6a', evaluationMs: 0.41 } },
      },
    },
  }, async (req, reply) => {
    const t0 = performance.now();
    const out = await enforcer.enforce(who(principalOf(req)), req.body, t0);
    reply.header('server-timing', out.serverTiming);
    return { data: out.decision };
  });

  r.post('/policies/test', {
    // contract.md ("Principals, roles and scopes"): a dry run changes no configuration, so policy:read and any role, like enforce.
    config: { auth: { scope: 'policy:read', role: 'viewer' } },
    bodyLimit: ENFORCE_BODY_LIMIT_BYTES,
    schema: {
      tags,
      operationId: 'policies.test',
      summary: 'Dry-run an unsaved policy against a request',
      description:
        '`policy` is validated exactly like a create (422 naming `policy.<field>`, e.g. `policy.ruleDefinition.detect.0`); the answer is the enforce answer for that one policy against `request`, with the agent as enforce reads it. Nothing is saved, recorded or emitted: a window limit counts on a throwaway counter (no quota is used), no access grant is created (`require_approval` comes without `accessGrantId`), and a custom validator is called for real, signed with a one-off secret.',
      body: testPolicyInput,
      response: { 200: dataSchema(enforceDecisionSchema), ...errorResponses, ...notFoundResponse },
      ...enforceHeaders,
    },
  }, async (req, reply) => {
    const t0 = performance.now();
    const p = principalOf(req);
    const def = await svc.dryRunDefinition(db, p.organizationId, req.body.policy, clock.now());
    const out = await enforcer.dryRun(who(p), def, req.body.request, t0);
    reply.header('server-timing', out.serverTiming);
    return { data: out.decision };
  });

  r.post('/policies/:id/rotate-validator-secret', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.rotateValidatorSecret', summary: 'Rotate the secret that signs validator calls', description: 'For a custom policy with `validatorUrl` (409 INVALID_TRANSITION otherwise): a new `validatorSecret` (`whsec_` + base64 of 32 random bytes) is generated and returned in this answer only; the next validator call is signed with it and the old one stops at once. Audited (`policy.rotate_validator_secret`, without the secret).', params: idParams, response: { 200: dataSchema(policyWithSecretSchema), ...errorResponses, ...conflictResponse } },
  }, async (req) => one(await svc.rotateValidatorSecret(db, auditContext(req), req.params.id, changed)));

  r.get('/policies', {
    config: { auth: read },
    schema: { tags, operationId: 'policies.list', summary: 'List policies in evaluation order', description: 'Ordered by ascending `priority`, then id (the order enforcement runs them in). Filters: policyType, isActive, enforcementMode, agentId (policies naming the agent in `agentId` or `appliesToAgents`) and a text `search` over name and description.', querystring: listPoliciesQuery, response: { 200: pageSchema(policySchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listPolicies(db, principalOf(req).organizationId, req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/policies', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.create', summary: 'Create a policy', description: '`ruleDefinition` is validated for the `policyType` (422 naming `ruleDefinition.<path>`); `agentId` and `appliesToAgents` must name agents of the organization; `maxRequests` and `timeWindowSeconds` go together. Takes effect for enforcement at once on every instance. A custom policy with `validatorUrl` gets a `validatorSecret` that signs its validator calls, returned in this answer only. Audited (`policy.create`).', body: createPolicyInput, response: { 201: dataSchema(policyWithSecretSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createPolicy(db, auditContext(req), req.body, changed))));

  r.get('/policies/:id', {
    config: { auth: read },
    schema: { tags, operationId: 'policies.get', summary: 'Get a policy', description: 'A policy of your organization (any other id is 404).', params: idParams, response: { 200: dataSchema(policySchema), ...errorResponses } },
  }, async (req) => one(svc.policyView(await svc.getPolicy(db, principalOf(req).organizationId, req.params.id))));

  r.patch('/policies/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.update', summary: 'Update a policy', description: 'Accepts every CreatePolicyInput field; only the given ones change. A new `policyType` needs a `ruleDefinition` valid for it: without one in the body, the stored ruleDefinition must fit the new type (422 otherwise). A request that changes nothing writes no audit entry. A custom policy that first gets a `validatorUrl` gets its `validatorSecret`, returned in this answer only. Audited (`policy.update`).', params: idParams, body: updatePolicyInput, response: { 200: dataSchema(policyWithSecretSchema), ...errorResponses } },
  }, async (req) => one(await svc.updatePolicy(db, auditContext(req), req.params.id, req.body, changed)));

  r.delete('/policies/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'policies.delete', summary: 'Delete a policy', description: 'Deletes the policy for good; enforcement stops using it at once. To keep it but stop enforcing it, PATCH `isActive: false`. Audited (`policy.delete`, with the policy as it was).', params: idParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deletePolicy(db, auditContext(req), req.params.id, changed);
    return reply.code(204).send(null);
  });
}
