/**
 * Two app instances on one PostgreSQL and one Redis (docs/decisions.md, "Enforce route"): a policy
 * created through instance A changes instance B's enforce answer within a second, through the
 * route; a window limit counts across both instances (the shared state).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

const onB = (b: TestApp, org: TestOrg) => (payload: Record<string, unknown>) =>
  b.app.inject({ method: 'POST', url: '/api/v1/policies/enforce', headers: { 'x-api-key': org.key }, payload });

describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)('enforce on two instances (PostgreSQL + Redis)', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp(); // the same file database, its own Redis connections
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("a policy created through A changes B's decision within a second", async () => {
    const org = await createOrg(a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    const enforceB = onB(b, org);
    const body = { agentId: agent.id, action: { type: 'tool_call', name: 'drop_table' } };
    expect((await enforceB(body)).json().data.decision).toBe('allow'); // B caches the empty policy list
    const created = await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'no drops', policyType: 'access_control', ruleDefinition: { denyActions: ['drop_*'] }, enforcementMode: 'block' } });
    expect(created.statusCode).toBe(201);
    const start = Date.now();
    let decision = 'allow';
    while (decision !== 'deny' && Date.now() - start < 1000) {
      decision = (await enforceB(body)).json().data.decision;
      if (decision !== 'deny') await new Promise((r) => setTimeout(r, 10));
    }
    expect(decision).toBe('deny');
    console.log(`B denied ${Date.now() - start} ms after A's create answered`);
  });

  it('a window limit counts the matches of both instances', async () => {
    const org = await createOrg(a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'two', policyType: 'cost_limit', ruleDefinition: {}, enforcementMode: 'block', maxRequests: 2, timeWindowSeconds: 3600 } });
    const body = { agentId: agent.id, action: { type: 'tool_call', name: 'x' } };
    const onA = (payload: Record<string, unknown>) => org.req({ method: 'POST', url: '/api/v1/policies/enforce', payload });
    expect((await onA(body)).json().data.decision).toBe('allow');
    expect((await onB(b, org)(body)).json().data.decision).toBe('allow');
    expect((await onA(body)).json().data.violations[0].code).toBe('limit.exceeded');
  });
});
