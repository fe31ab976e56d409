/** HTTP routes for /agents. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
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

  r.post('/agents', {
    config: { auth: write },
    schema: { tags, summary: 'Register an agent (409 when agentId exists)', body: registerAgentInput, response: { 201: dataSchema(agentSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.registerAgent(db, auditContext(req), req.body))));

  r.get('/agents', {
    config: { auth: read },
    schema: { tags, summary: 'List agents', querystring: listAgentsQuery, response: { 200: pageSchema(agentSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listAgents(db, principalOf(req).organizationId, req.query, clock.now());
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.post('/agents/kill-switch', {
    config: { auth: write },
    schema: { tags, summary: 'Pause every active agent of the organization (or of one environment)', body: killSwitchInput, response: { 200: dataSchema(killSwitchResult), ...errorResponses } },
  }, async (req) => one(await svc.killSwitch(db, auditContext(req), req.body.reason, req.body.environment)));

  r.get('/agents/budgets', {
    config: { auth: analytics },
    schema: { tags, summary: 'Budgets of every agent with one', querystring: z.object(pagination), response: { 200: pageSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => {
    const { rows, total } = await svc.listBudgets(db, principalOf(req).organizationId, req.query.limit, req.query.offset, clock.now());
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/agents/:id', {
    config: { auth: { ...read, agentKeys: true } },
    schema: { tags, summary: 'Get an agent', params: idParams, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => one(svc.agentView(await svc.getAgent(db, principalOf(req), req.params.id), clock.now())));

  r.patch('/agents/:id', {
    config: { auth: write },
    schema: { tags, summary: 'Update an agent', params: idParams, body: updateAgentInput, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => one(await svc.updateAgent(db, auditContext(req), req.params.id, req.body)));

  r.delete('/agents/:id', {
    config: { auth: write },
    schema: { tags, summary: 'Archive an agent (its traces are kept)', params: idParams, response: { 200: dataSchema(agentSchema), ...errorResponses } },
  }, async (req) => one(await svc.archiveAgent(db, auditContext(req), req.params.id)));

  const transition = errorResponses;
  r.post('/agents/:id/pause', {
    config: { auth: write },
    schema: { tags, summary: 'Pause an agent (kill switch); enforcement then denies it', params: idParams, body: pauseInput.optional(), response: { 200: dataSchema(agentSchema), ...transition } },
  }, async (req) => one(await svc.pauseAgent(db, auditContext(req), req.params.id, req.body?.reason)));

  r.post('/agents/:id/resume', {
    config: { auth: write },
    schema: { tags, summary: 'Resume a paused agent', params: idParams, response: { 200: dataSchema(agentSchema), ...transition } },
  }, async (req) => one(await svc.resumeAgent(db, auditContext(req), req.params.id)));

  r.put('/agents/:id/budget', {
    config: { auth: write },
    schema: { tags, summary: 'Set the monthly budget', params: idParams, body: budgetInput, response: { 200: dataSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => one(await svc.setBudget(db, auditContext(req), req.params.id, req.body)));

  r.get('/agents/:id/budget', {
    config: { auth: analytics },
    schema: { tags, summary: 'Budget, month-to-date spend and projection', params: idParams, response: { 200: dataSchema(agentBudgetSchema), ...errorResponses } },
  }, async (req) => one(svc.budgetView(await svc.getAgent(db, principalOf(req), req.params.id), clock.now())));

  r.get('/agents/:id/stats', {
    config: { auth: analytics },
    schema: { tags, summary: 'Trace statistics for the last 24 h, 7 d and 30 d', params: idParams, response: { 200: dataSchema(agentStatsSchema), ...errorResponses } },
  }, async (req) => one(await svc.agentStats(db, principalOf(req), req.params.id, clock.now())));

  r.post('/agents/:id/keys', {
    config: { auth: admin },
    schema: { tags, summary: 'Create an agent-scoped key (ingest and enforce for this agent only; shown once)', params: idParams, body: generateAgentKeyInput, response: { 201: dataSchema(apiKeyWithSecretSchema), ...errorResponses } },
  }, async (req, reply) => reply.code(201).send(one(await svc.createAgentKey(db, auditContext(req), req.params.id, req.body))));

  r.get('/agents/:id/keys', {
    config: { auth: admin },
    schema: { tags, summary: "List an agent's keys", params: idParams, response: { 200: z.object({ data: z.array(apiKeySchema), meta: z.object({ total: z.number().int() }) }), ...errorResponses } },
  }, async (req) => {
    const rows = await svc.listAgentKeys(db, principalOf(req), req.params.id);
    return { data: rows, meta: { total: rows.length } };
  });

  r.delete('/agents/:id/keys/:keyId', {
    config: { auth: admin },
    schema: { tags, summary: "Delete one of an agent's keys", params: agentKeyParams, response: { 204: z.null().describe('No content'), ...errorResponses } },
  }, async (req, reply) => {
    await svc.deleteAgentKey(db, auditContext(req), req.params.id, req.params.keyId, forgetKey);
    return reply.code(204).send(null);
  });
}
