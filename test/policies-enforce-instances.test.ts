/**
 * Two app instances on one PostgreSQL and one Redis (docs/decisions.md, "Enforce route"): a policy
 * created through instance A changes instance B's enforce answer within a second, through the
 * route; a window limit counts across both instances (the shared state); the agent cache: a pause
 * or an update on A is seen by B within a second (pub/sub), a spent budget at once (fresh read).
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { createOrg, type TestApp, type TestOrg } from './helpers.js';
import { describeOnTwoInstances } from './instances.js';

const onB = (b: TestApp, org: TestOrg) => (payload: Record<string, unknown>) =>
  b.app.inject({ method: 'POST', url: '/api/v1/policies/enforce', headers: { 'x-api-key': org.key }, payload });

describeOnTwoInstances('enforce on two instances (PostgreSQL + Redis)', (apps) => {
  it("a policy created through A changes B's decision within a second", async () => {
    const org = await createOrg(apps.a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    const enforceB = onB(apps.b, org);
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
    const org = await createOrg(apps.a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'two', policyType: 'cost_limit', ruleDefinition: {}, enforcementMode: 'block', maxRequests: 2, timeWindowSeconds: 3600 } });
    const body = { agentId: agent.id, action: { type: 'tool_call', name: 'x' } };
    const onA = (payload: Record<string, unknown>) => org.req({ method: 'POST', url: '/api/v1/policies/enforce', payload });
    expect((await onA(body)).json().data.decision).toBe('allow');
    expect((await onB(apps.b, org)(body)).json().data.decision).toBe('allow');
    expect((await onA(body)).json().data.violations[0].code).toBe('limit.exceeded');
  });
  // Polls B until `want` or a second has passed; answers the last code and how long it took.
  async function until(enforceB: (p: Record<string, unknown>) => Promise<{ json(): any }>, body: Record<string, unknown>, want: string) {
    const start = Date.now();
    let got = '';
    while (Date.now() - start < 1000) {
      const d = (await enforceB(body)).json().data;
      got = d.violations[0]?.code ?? d.decision;
      if (got === want) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    return { got, ms: Date.now() - start };
  }

  it('a pause on A is denied by B within a second (agent cache invalidated through pub/sub)', async () => {
    const org = await createOrg(apps.a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    const enforceB = onB(apps.b, org);
    const body = { agentId: agent.agentId, action: { type: 'tool_call', name: 'x' } };
    expect((await enforceB(body)).json().data.decision).toBe('allow'); // B caches the agent
    expect((await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/pause` })).statusCode).toBe(200);
    const { got, ms } = await until(enforceB, body, 'agent.paused');
    expect(got).toBe('agent.paused');
    console.log(`B denied the paused agent ${ms} ms after A's pause answered`);
  });

  it("an update on A reaches B's request.agent within a second", async () => {
    const org = await createOrg(apps.a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'tagged', policyType: 'custom', ruleDefinition: { expression: "'frozen' in request.agent.tags" }, enforcementMode: 'block' } });
    const enforceB = onB(apps.b, org);
    const body = { agentId: agent.id, action: { type: 'tool_call', name: 'x' } };
    expect((await enforceB(body)).json().data.decision).toBe('allow'); // B caches the agent
    expect((await org.req({ method: 'PATCH', url: `/api/v1/agents/${agent.id}`, payload: { tags: ['frozen'] } })).statusCode).toBe(200);
    const { got, ms } = await until(enforceB, body, 'custom.expression');
    expect(got).toBe('custom.expression');
    console.log(`B saw the update ${ms} ms after A's update answered`);
  });

  it('a budget spent through ingest on A is denied by B at once (budget_cap reads the spend fresh)', async () => {
    const org = await createOrg(apps.a);
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'cap', policyType: 'budget_cap', ruleDefinition: { maxMonthlyCostUsd: 1 }, enforcementMode: 'block' } });
    const enforceB = onB(apps.b, org);
    const body = { agentId: agent.id, action: { type: 'tool_call', name: 'x' } };
    expect((await enforceB(body)).json().data.decision).toBe('allow'); // B caches the agent
    // A publishes nothing for this ingest: B's cached agent stays at spend 0, only the fresh read can deny.
    const agentsA = apps.a.container.services.agents;
    const invalidate = agentsA.invalidate;
    agentsA.invalidate = async () => {};
    try {
      expect((await org.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: [{ traceId: randomUUID(), agentId: agent.agentId, costUsd: 1 }] } })).statusCode).toBe(202);
      expect((await enforceB(body)).json().data.violations[0]?.code).toBe('budget.exceeded');
    } finally {
      agentsA.invalidate = invalidate;
    }
  });
});
