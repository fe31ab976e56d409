/**
 * The enforce route's agent cache on one instance (docs/decisions.md, "Enforce route"): every agent
 * is enforced once first (so it is cached), then changed through the API or ingest; the next
 * enforce must see the change at once. budget_cap reads the spend fresh even when the cache is
 * stale (its invalidation stubbed out).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from './fixture.js';
import type { TestOrg } from './helpers.js';

const ENFORCE = '/api/v1/policies/enforce';

async function newAgent(o: TestOrg, extra: Record<string, unknown> = {}) {
  const res = await o.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production', ...extra } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; agentId: string };
}
async function policy(o: TestOrg, policyType: string, ruleDefinition: Record<string, unknown>) {
  const res = await o.req({ method: 'POST', url: '/api/v1/policies', payload: { name: `${policyType} policy`, policyType, ruleDefinition, enforcementMode: 'block' } });
  expect(res.statusCode, res.body).toBe(201);
}
async function decide(o: TestOrg, agentId: string, extra: Record<string, unknown> = {}) {
  const res = await o.req({ method: 'POST', url: ENFORCE, payload: { agentId, action: { type: 'tool_call', name: 'search' }, ...extra } });
  expect(res.statusCode, res.body).toBe(200);
  const d = res.json().data as { decision: string; violations: { code: string }[] };
  return d.violations[0]?.code ?? d.decision;
}
const ingest = (o: TestOrg, traces: Record<string, unknown>[]) => o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces } });

describe('agent cache on one instance', () => {
  it('pause, resume and archive through the API are seen by the next enforce (by uuid and by external id)', async ({ freshOrg: o }) => {
    const a = await newAgent(o);
    expect(await decide(o, a.id)).toBe('allow');
    expect(await decide(o, a.agentId)).toBe('allow');
    expect((await o.req({ method: 'POST', url: `/api/v1/agents/${a.id}/pause`, payload: { reason: 'stop' } })).statusCode).toBe(200);
    expect(await decide(o, a.id)).toBe('agent.paused');
    expect(await decide(o, a.agentId)).toBe('agent.paused');
    expect((await o.req({ method: 'POST', url: `/api/v1/agents/${a.id}/resume` })).statusCode).toBe(200);
    expect(await decide(o, a.agentId)).toBe('allow');
    expect((await o.req({ method: 'DELETE', url: `/api/v1/agents/${a.id}` })).statusCode).toBe(200);
    expect(await decide(o, a.agentId)).toBe('agent.archived');
  });

  it('the kill switch denies every cached agent of the organization at once', async ({ freshOrg: o }) => {
    const a = await newAgent(o);
    const b = await newAgent(o, { environment: 'staging' });
    expect(await decide(o, a.id)).toBe('allow');
    expect(await decide(o, b.agentId)).toBe('allow');
    expect((await o.req({ method: 'POST', url: '/api/v1/agents/kill-switch', payload: { reason: 'incident' } })).json().data.pausedCount).toBe(2);
    expect(await decide(o, a.id)).toBe('agent.paused');
    expect(await decide(o, b.agentId)).toBe('agent.paused');
  });

  it('an update and a budget change are seen by CEL (request.agent) at once', async ({ freshOrg: o }) => {
    const a = await newAgent(o);
    await policy(o, 'custom', { expression: "request.agent.name == 'blocked' || (has(request.agent.monthlyBudgetUsd) && request.agent.monthlyBudgetUsd == 7.0)" });
    expect(await decide(o, a.id)).toBe('allow');
    expect((await o.req({ method: 'PATCH', url: `/api/v1/agents/${a.id}`, payload: { name: 'blocked' } })).statusCode).toBe(200);
    expect(await decide(o, a.id)).toBe('custom.expression');
    expect((await o.req({ method: 'PATCH', url: `/api/v1/agents/${a.id}`, payload: { name: 'fine' } })).statusCode).toBe(200);
    expect(await decide(o, a.id)).toBe('allow');
    expect((await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 7, budgetAction: 'alert' } })).statusCode).toBe(200);
    expect(await decide(o, a.id)).toBe('custom.expression');
  });

  it('ingest that pauses the agent for its budget (pause_agent) is seen by the next enforce', async ({ app, freshOrg: o }) => {
    app.clock.set('2026-03-10T12:00:00Z');
    const a = await newAgent(o);
    await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 1, budgetAction: 'pause_agent' } });
    expect(await decide(o, a.id)).toBe('allow');
    expect((await ingest(o, [{ traceId: randomUUID(), agentId: a.agentId, costUsd: 1.5 }])).statusCode).toBe(202);
    // No budget_cap policy: only the status (paused by the budget), which comes from the cache, can deny.
    expect(await decide(o, a.id)).toBe('budget.exceeded');
  });

  it('budget_cap reads the spend the database holds now, even from a stale cached agent', async ({ app, freshOrg: o }) => {
    app.clock.set('2026-03-10T12:00:00Z');
    const a = await newAgent(o);
    await policy(o, 'budget_cap', { maxMonthlyCostUsd: 1 });
    expect(await decide(o, a.id, { estimatedCostUsd: 0.5 })).toBe('allow');
    const agents = app.container.services.agents;
    const invalidate = agents.invalidate;
    agents.invalidate = async () => {}; // the cache keeps the agent as it was (spend 0)
    try {
      expect((await ingest(o, [{ traceId: randomUUID(), agentId: a.agentId, costUsd: 1 }])).statusCode).toBe(202);
      expect(await decide(o, a.id)).toBe('budget.exceeded');
    } finally {
      agents.invalidate = invalidate;
    }
  });

  it('a newly registered agent is found at once (misses are not remembered)', async ({ freshOrg: o }) => {
    const ext = `a-${randomUUID()}`;
    expect((await o.req({ method: 'POST', url: ENFORCE, payload: { agentId: ext, action: { type: 'tool_call', name: 'x' } } })).statusCode).toBe(404);
    await newAgent(o, { agentId: ext });
    expect(await decide(o, ext)).toBe('allow');
  });
});
