/**
 * HTTP routes of the decision log and the policy stats: /policies/decisions and /policies/stats.
 * Their static segments win over `/policies/:id` in Fastify's router whatever the registration
 * order (tested in test/policy-decisions.test.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { dataSchema, errorResponses, one, page, pageSchema } from '../../http/envelope.js';
import { principalOf } from '../../http/context.js';
import { decisionParams, listDecisionsQuery, policyDecisionSchema, policyStatsSchema, statsQuery } from './schemas.js';
import * as svc from './service.js';

const tags = ['Policies'];
// An agent-scoped key holds policy:read for its own agent: it may read that agent's decisions (why was I stopped?).
const readDecisions = { scope: 'policy:read' as const, agentKeys: true };

/** Registers the decision log and stats routes. */
export async function policyDecisionRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db, clock } = app.deps;

  r.get('/policies/decisions', {
    config: { auth: readDecisions },
    schema: {
      tags,
      operationId: 'policies.listDecisions',
      summary: 'List recorded deny and require_approval decisions, newest first',
      description:
        'Every deny and require_approval decision of `POST /policies/enforce` is recorded (allow decisions are only counted: see `GET /policies/stats`), written in batches about a second after the decision. ' +
        'Filters: `agentId`, `policyId` (decisions where that policy produced a violation), `decision`, `from`/`to` (inclusive). Violations carry their codes and evidence offsets, never the matched text. An agent-scoped key sees only its own agent\'s decisions.',
      querystring: listDecisionsQuery,
      response: { 200: pageSchema(policyDecisionSchema), ...errorResponses },
    },
  }, async (req) => {
    const { rows, total } = await svc.listDecisions(db, principalOf(req), req.query);
    return page(rows, total, req.query.limit, req.query.offset);
  });

  r.get('/policies/decisions/:decisionId', {
    config: { auth: readDecisions },
    schema: {
      tags,
      operationId: 'policies.getDecision',
      summary: 'Get a recorded decision',
      description: "By the `decisionId` of the enforce response. Allow decisions are not recorded (404), nor is another organization's decision, or another agent's for an agent-scoped key.",
      params: decisionParams,
      response: { 200: dataSchema(policyDecisionSchema), ...errorResponses },
    },
  }, async (req) => one(await svc.getDecision(db, principalOf(req), req.params.decisionId)));

  r.get('/policies/stats', {
    config: { auth: { scope: 'analytics:read' } },
    schema: {
      tags,
      operationId: 'policies.stats',
      summary: 'Per policy, how often it allowed, denied, required approval or warned',
      description:
        'Counts per policy over the hourly buckets of the last `hours` (1-720, default 24; the first bucket is the hour holding now − hours), optionally for one agent. ' +
        'Per decision, each evaluated policy counts once: `deny` if it produced a blocking violation, `requireApproval` if it required approval, `warn` if it produced a warn or monitor warning, else `allow`. ' +
        'Kill-switch denials belong to no policy and are not counted. `policyName` is the current name (null for a deleted policy). Counts reach the database about a second after the decisions.',
      querystring: statsQuery,
      response: { 200: dataSchema(policyStatsSchema), ...errorResponses },
    },
  }, async (req) => one(await svc.policyStats(db, principalOf(req).organizationId, req.query, clock.now())));
}
