/** HTTP routes for /agents. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { conflictResponse, dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import type { RouteExample } from '../../http/openapi.js';
import { auditContext, principalOf } from '../../http/context.js';
import { environmentEnum, idParams, pagination } from '../../http/validation.js';
import { apiKeySchema, apiKeyWithSecretSchema } from '../api-keys/index.js';
import {
  agentBudgetSchema,
  agentKeyParams,
  agentSchema,
  agentStatsSchema,
  budgetInput,
  generateAgentKeyInput,
  killSwitchInput,
  listAgentsQuery,
  pauseInput,
  registerAgentInput,
  updateAgentInput,
} from './schemas.js';
import * as svc from './service.js';

const tags = ['Agents'];
const read = { scope: 'agent:read' as const };
const write = { scope: 'agent:write' as const };
const analytics = { scope: 'analytics:read' as const };
const admin = { scope: 'admin' as const };

const killSwitchResult = z
  .object({ pausedCount: z.number().int(), agentIds: z.array(z.uuid()), environment: environmentEnum.nullable(), reason: z.string() })
  .meta({ id: 'KillSwitchResult' });

export async function agentRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, clock } = app.deps;
  const forgetKey = app.deps.afterCommit.wrap('auth: forget a deleted agent key', (hash: string) => app.deps.auth.invalidateKey(hash));
  // Every committed write to an agent row forgets it in the enforce route's agent cache, here at
  // once and on the other instances through pub/sub (docs/decisions.md, "Enforce route").
  const forgetAgents = app.deps.afterCommit.wrap('agents: agent cache', (orgId: string, ids?: string[]) => app.deps.services.agents.invalidate(orgId, ids));
  const changed = async <T extends { id: string; organizationId: string }>(view: T) => {
    await forgetAgents(view.organizationId, [view.id]);
    return one(view);
  };

  r.post('/agents', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.register', summary: 'Register an agent', description: '`agentId` is your own identifier and must be unique in the organization, archived agents included (409 when taken). Audited (`agent.create`).', body: registerAgentInput, response: { 201: dataSchema(agentSchema), ...errorResponses, ...conflictResponse }, 'x-example': {
        request: { agentId: 'support-bot-eu', name: 'Support bot (EU)', type: 'chatbot', platform: 'openai', environment: 'production', tags: ['support'] },
        response: { data: {
          id: '0b5a7f0e-4a8e-4c61-9d0e-6f1f8d2b9c11', organizationId: '6a1c2b3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d', agentId: 'support-bot-eu', name: 'Support bot (EU)',
          description: null, type: 'chatbot', platform: 'openai', frameworkVersion: null, modelProvider: null, ownerUserId: null, teamId: null,
          environment: 'production', deploymentUrl: null, status: 'active', healthStatus: 'unknown', lastSeenAt: null, pausedAt: null, pausedBy: null,
          pauseReason: null, monthlyBudgetUsd: null, budgetAction: 'alert', currentMonthCostUsd: 0, tags: ['support'], metadata: {},
          createdAt: '2026-01-15T09:30:00.000Z', updatedAt: '2026-01-15T09:30:00.000Z', createdBy: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
        } },
      } satisfies RouteExample },
  }, async (req, reply) => reply.code(201).send(await changed(await svc.registerAgent(db, auditContext(req), req.body))));

  r.get('/agents', {
    config: { auth: read },
    schema: { tags, operationId: 'agents.list', summary: 'List agents', description: 'Filters: status, environment, type, platform, teamId, tag and a text `search`.', querystring: listAgentsQuery, response: { 200: pageSchema(agentSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listAgents(db, principalOf(req).organizationId, req.query, clock.now());
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/agents/kill-switch', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.killSwitch', summary: 'Pause every active agent of the organization (or of one environment)', description: 'Pauses every active agent of the organization, or of one `environment`, in one transaction; already paused agents are left as they are. Audited once (`agent.kill_switch`) plus one `agent.pause` entry per agent.', body: killSwitchInput, response: { 200: dataSchema(killSwitchResult), ...errorResponses } },
  }, async (req) => {
    const out = await svc.killSwitch(db, auditContext(req), req.body.reason, req.body.environment);
    // Every agent of the organization (one message, however many were paused).
    await forgetAgents(principalOf(req).organizationId);
    return one(out);
  });

  r.get('/agents/budgets', {
    config: { auth: analytics },
    schema: { tags, operationId: 'agents.listBudgets', summary: 'Budgets of every agent with one', description: 'Only agents with a monthly budget; spend is month to date (UTC) with a linear projection to month end.', querystring: z.object(pagination), response: { 200: pageSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listBudgets(db, principalOf(req).organizationId, req.query.limit, req.query.offset, clock.now());
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/agents/:id', {
    config: { auth: { ...read, agentKeys: true } },
    schema: { tags, operationId: 'agents.get', summary: 'Get an agent', description: 'An agent-scoped key may read only its own agent (any other id is 404).', params: idParams, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => one(svc.agentView(await svc.getAgent(db, principalOf(req), req.params.id), clock.now())));

  r.patch('/agents/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.update', summary: 'Update an agent', description: 'Only the given fields change (name, description, tags, metadata, owner, team, deploymentUrl); `agentId`, environment and status are not changed here (status changes through pause, resume and archive). Audited (`agent.update`).', params: idParams, body: updateAgentInput, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => changed(await svc.updateAgent(db, auditContext(req), req.params.id, req.body)));

  r.delete('/agents/:id', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.archive', summary: 'Archive an agent (its traces are kept)', description: 'Archives rather than deletes: the agent keeps its traces and its agentId stays taken. Archiving an archived agent changes nothing and answers 200. Audited (`agent.delete`).', params: idParams, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => changed(await svc.archiveAgent(db, auditContext(req), req.params.id)));

  const transition = { ...errorResponses, ...conflictResponse };
  r.post('/agents/:id/pause', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.pause', summary: 'Pause an agent (kill switch); enforcement then denies it', description: 'The body (`reason`) is optional. Only an active agent can be paused (409 INVALID_TRANSITION otherwise). Audited (`agent.pause`); emits `kill_switch_triggered`.', params: idParams, body: pauseInput.optional(), response: { 200: dataSchema(agentSchema), ...transition } },
  }, async (req) => changed(await svc.pauseAgent(db, auditContext(req), req.params.id, req.body?.reason)));

  r.post('/agents/:id/resume', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.resume', summary: 'Resume a paused agent', description: 'Only a paused agent can be resumed (409 INVALID_TRANSITION otherwise). Audited (`agent.resume`).', params: idParams, response: { 200: dataSchema(agentSchema), ...transition } },
  }, async (req) => changed(await svc.resumeAgent(db, auditContext(req), req.params.id)));

  r.put('/agents/:id/budget', {
    config: { auth: write },
    schema: { tags, operationId: 'agents.setBudget', summary: 'Set the monthly budget', description: 'Sets the monthly budget, its warning threshold and `budgetAction`: `alert` only emits events, `pause_agent` also pauses the agent when spend reaches the budget. Audited (`agent.budget_update`).', params: idParams, body: budgetInput, response: { 200: dataSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => {
    const out = await svc.setBudget(db, auditContext(req), req.params.id, req.body);
    await forgetAgents(principalOf(req).organizationId, [out.agentId]);
    return one(out);
  });

  r.get('/agents/:id/budget', {
    config: { auth: analytics },
    schema: { tags, operationId: 'agents.getBudget', summary: 'Budget, month-to-date spend and projection', description: 'Spend is month to date (UTC), from ingested trace costs.', params: idParams, response: { 200: dataSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => one(svc.budgetView(await svc.getAgent(db, principalOf(req), req.params.id), clock.now())));

  r.get('/agents/:id/stats', {
    config: { auth: analytics },
    schema: { tags, operationId: 'agents.getStats', summary: 'Trace statistics for the last 24 h, 7 d and 30 d', description: 'Totals, success rate, average and p95 duration and cost over the last 24 h, 7 d and 30 d.', params: idParams, response: { 200: dataSchema(agentStatsSchema), ...errorResponses } },
  }, async (req) => one(await svc.agentStats(db, principalOf(req), req.params.id, clock.now())));

  r.post('/agents/:id/keys', {
    config: { auth: admin },
    schema: { tags, operationId: 'agents.createKey', summary: 'Create an agent-scoped key (ingest and enforce for this agent only; shown once)', description: 'The key can only ingest traces and enforce policies for this agent; its `key` is shown only in this response. Audited (`api_key.create`).', params: idParams, body: generateAgentKeyInput, response: { 201: dataSchema(apiKeyWithSecretSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createAgentKey(db, auditContext(req), req.params.id, req.body))));

  r.get('/agents/:id/keys', {
    config: { auth: admin },
    schema: { tags, operationId: 'agents.listKeys', summary: "List an agent's keys", description: 'Without secrets.', params: idParams, response: { 200: z.object({ data: z.array(apiKeySchema), meta: z.object({ total: z.number().int() }) }), ...errorResponses } },
  }, async (req) => {
    const rows = await svc.listAgentKeys(db, principalOf(req), req.params.id);
    return { data: rows, meta: { total: rows.length } };
  });

  r.delete('/agents/:id/keys/:keyId', {
    config: { auth: admin },
    schema: { tags, operationId: 'agents.deleteKey', summary: "Delete one of an agent's keys", description: 'The key stops working at once. Audited (`api_key.delete`).', params: agentKeyParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteAgentKey(db, auditContext(req), req.params.id, req.params.keyId, forgetKey);
    return reply.code(204).send(null);
  });
}
