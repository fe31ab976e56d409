import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import { describe, expect, it } from './fixture.js';
import { createKey, createOrg, type TestApp, type TestOrg } from './helpers.js';
import { monthOf } from '../src/domains/agents/service.js';

const register = async (o: TestOrg, body: Record<string, unknown> = {}) => {
  const res = await o.req({
    method: 'POST', url: '/api/v1/agents',
    payload: { agentId: `bot-${randomUUID()}`, name: 'Support bot', type: 'chatbot', platform: 'openai', environment: 'production', ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data;
};

const events = (app: TestApp, orgId: string, type: string) =>
  app.database.db.select().from(outboxEvents).where(and(eq(outboxEvents.organizationId, orgId), eq(outboxEvents.type, type)));

describe('agent registration', () => {
  it('registers with defaults, emits agent_registered and audits; a duplicate agentId is 409', async ({ app, org }) => {
    const a = await register(org, { agentId: 'support-bot', tags: ['support'] });
    expect(a).toMatchObject({
      agentId: 'support-bot', status: 'active', healthStatus: 'unknown', budgetAction: 'alert', currentMonthCostUsd: 0,
      tags: ['support'], metadata: {}, lastSeenAt: null, monthlyBudgetUsd: null,
    });
    expect((await events(app, org.orgId, 'agent_registered')).some((e) => e.agentId === a.id)).toBe(true);
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceId=${a.id}` });
    expect(audit.json().data[0].action).toBe('agent.create');
    const dup = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: 'support-bot', name: 'x', type: 'chatbot', platform: 'openai', environment: 'production' } });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error.code).toBe('CONFLICT');
  });

  it('422 with fields for bad enums and missing required fields', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: '', type: 'robot', platform: 'skynet', environment: 'prod', deploymentUrl: 'not a url' } });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(res.json().error.fields)).toEqual(expect.arrayContaining(['agentId', 'name', 'type', 'platform', 'environment', 'deploymentUrl']));
  });
});

describe('listing and reading', () => {
  it('filters by status, environment, type, platform, tag and search', async ({ freshOrg: o }) => {
    await register(o, { agentId: 'alpha', name: 'Alpha helper', tags: ['a'], environment: 'staging', type: 'workflow' });
    await register(o, { agentId: 'beta', name: 'Beta', description: 'handles refunds', platform: 'anthropic', tags: ['b'] });
    const q = async (qs: string) => (await o.req({ method: 'GET', url: `/api/v1/agents?${qs}` })).json();
    expect((await q('')).meta).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect((await q('environment=staging')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['alpha']);
    expect((await q('type=workflow')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['alpha']);
    expect((await q('platform=anthropic')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['beta']);
    expect((await q('tag=b')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['beta']);
    expect((await q('search=refund')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['beta']);
    expect((await q('search=ALPHA')).data.map((a: { agentId: string }) => a.agentId)).toEqual(['alpha']);
    expect((await q('search=%25')).meta.total).toBe(0);
    expect((await q('status=paused')).meta.total).toBe(0);
    expect((await o.req({ method: 'GET', url: '/api/v1/agents?status=gone' })).statusCode).toBe(422);
  });

  it("another organization's agent is 404 everywhere and never listed", async ({ app, org }) => {
    const a = await register(org);
    const other = await createOrg(app);
    for (const [method, url, payload] of [
      ['GET', `/api/v1/agents/${a.id}`], ['PATCH', `/api/v1/agents/${a.id}`, { name: 'x' }], ['DELETE', `/api/v1/agents/${a.id}`],
      ['POST', `/api/v1/agents/${a.id}/pause`, {}], ['POST', `/api/v1/agents/${a.id}/resume`], ['GET', `/api/v1/agents/${a.id}/stats`],
      ['GET', `/api/v1/agents/${a.id}/budget`], ['PUT', `/api/v1/agents/${a.id}/budget`, { monthlyBudgetUsd: 1 }],
      ['POST', `/api/v1/agents/${a.id}/keys`, { name: 'k' }], ['GET', `/api/v1/agents/${a.id}/keys`],
    ] as const) {
      const res = await other.req({ method, url, payload });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await other.req({ method: 'GET', url: '/api/v1/agents?limit=100' })).json().data).toHaveLength(0);
  });
});

describe('update, archive, pause, resume, kill switch', () => {
  it('updates fields (422 for an unknown team), emits agent_updated', async ({ app, org }) => {
    const a = await register(org);
    const res = await org.req({ method: 'PATCH', url: `/api/v1/agents/${a.id}`, payload: { name: 'Renamed', tags: ['x'], metadata: { tier: 1 } } });
    expect(res.json().data).toMatchObject({ name: 'Renamed', tags: ['x'], metadata: { tier: 1 } });
    expect((await events(app, org.orgId, 'agent_updated')).some((e) => e.agentId === a.id)).toBe(true);
    const bad = await org.req({ method: 'PATCH', url: `/api/v1/agents/${a.id}`, payload: { teamId: randomUUID() } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.fields.teamId).toBeDefined();
  });

  it('pause stamps the fields and emits kill_switch_triggered; resume clears them; wrong states are 409', async ({ app, org }) => {
    const a = await register(org);
    const p = await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/pause`, payload: { reason: 'runaway loop' } });
    expect(p.statusCode).toBe(200);
    // pausedAt is the app's (injected) clock's time, as the pause's audit entry and event are.
    expect(p.json().data).toMatchObject({ status: 'paused', pauseReason: 'runaway loop', pausedBy: expect.any(String), pausedAt: app.clock.now().toISOString() });
    const ev = (await events(app, org.orgId, 'kill_switch_triggered')).find((e) => e.agentId === a.id);
    expect(ev?.data).toMatchObject({ reason: 'runaway loop', trigger: 'manual' });
    const again = await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/pause`, payload: {} });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('INVALID_TRANSITION');
    const r = await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/resume` });
    expect(r.json().data).toMatchObject({ status: 'active', pausedAt: null, pausedBy: null, pauseReason: null });
    expect((await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/resume` })).statusCode).toBe(409);
  });

  it('archive keeps the agent readable with status archived and emits agent_deleted', async ({ app, org }) => {
    const a = await register(org);
    const res = await org.req({ method: 'DELETE', url: `/api/v1/agents/${a.id}` });
    expect(res.json().data.status).toBe('archived');
    expect((await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}` })).json().data.status).toBe('archived');
    expect((await events(app, org.orgId, 'agent_deleted')).some((e) => e.agentId === a.id)).toBe(true);
    expect((await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/pause`, payload: {} })).statusCode).toBe(409);
  });

  it('the kill switch pauses every active agent (or one environment) and answers the count', async ({ freshOrg: o }) => {
    const a = await register(o, { environment: 'production' });
    const b = await register(o, { environment: 'staging' });
    const c = await register(o, { environment: 'production' });
    await o.req({ method: 'POST', url: `/api/v1/agents/${c.id}/pause`, payload: {} });
    const res = await o.req({ method: 'POST', url: '/api/v1/agents/kill-switch', payload: { reason: 'incident 42', environment: 'production' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ pausedCount: 1, agentIds: [a.id] });
    expect((await o.req({ method: 'GET', url: `/api/v1/agents/${b.id}` })).json().data.status).toBe('active');
    const all = await o.req({ method: 'POST', url: '/api/v1/agents/kill-switch', payload: { reason: 'all' } });
    expect(all.json().data.pausedCount).toBe(1);
    // The body is optional (contract.md): no reason is the default reason.
    const d = await register(o, { environment: 'development' });
    const bare = await o.req({ method: 'POST', url: '/api/v1/agents/kill-switch' });
    expect(bare.statusCode).toBe(200);
    expect(bare.json().data).toMatchObject({ pausedCount: 1, agentIds: [d.id], reason: 'Kill switch activated' });
    expect((await o.req({ method: 'POST', url: '/api/v1/agents/kill-switch', payload: { reason: '' } })).statusCode).toBe(422);
  });
});

describe('budgets and stats', () => {
  it('PUT/GET budget and GET /agents/budgets', async ({ freshOrg: o }) => {
    const a = await register(o);
    await register(o);
    const put = await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 100, budgetAction: 'pause_agent', warningThresholdPct: 75 } });
    expect(put.statusCode).toBe(200);
    expect(put.json().data).toMatchObject({
      agentId: a.id, monthlyBudgetUsd: 100, currentMonthSpend: 0, percentUsed: 0, budgetAction: 'pause_agent',
      projectedMonthSpend: 0, willExceedBudget: false, warningThresholdPct: 75,
    });
    const days = put.json().data.daysRemainingInPeriod;
    expect(days).toBeGreaterThanOrEqual(0);
    expect(days).toBeLessThanOrEqual(31);
    const list = await o.req({ method: 'GET', url: '/api/v1/agents/budgets' });
    expect(list.json().data.map((b: { agentId: string }) => b.agentId)).toEqual([a.id]);
    expect((await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: -1 } })).statusCode).toBe(422);
    expect((await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 5, warningThresholdPct: 0 } })).statusCode).toBe(422);
  });

  it('stats are zero before any trace', async ({ org }) => {
    const a = await register(org);
    const res = await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}/stats` });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.last24h).toEqual({ total: 0, success: 0, error: 0, successRate: 0, avgDurationMs: 0, p95DurationMs: 0, totalCostUsd: 0 });
  });
});

describe('agent-scoped keys', () => {
  it('are created under an agent, shown once, and can read only their own agent', async ({ org }) => {
    const a = await register(org);
    const b = await register(org);
    const res = await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/keys`, payload: { name: 'sdk' } });
    expect(res.statusCode).toBe(201);
    const k = res.json().data;
    expect(k).toMatchObject({ agentId: a.id, scopes: ['trace:write', 'policy:read', 'agent:read'], environment: 'production' });
    expect(k.key).toMatch(/^svc_prod_/);
    expect((await org.req({ key: k.key, method: 'GET', url: `/api/v1/agents/${a.id}` })).statusCode).toBe(200);
    expect((await org.req({ key: k.key, method: 'GET', url: `/api/v1/agents/${b.id}` })).statusCode).toBe(404);
    for (const [method, url] of [['GET', '/api/v1/agents'], ['POST', `/api/v1/agents/${a.id}/pause`], ['GET', '/api/v1/api-keys'], ['PATCH', `/api/v1/agents/${a.id}`]] as const) {
      expect((await org.req({ key: k.key, method, url, payload: method === 'GET' ? undefined : {} })).statusCode, url).toBe(403);
    }
    const listed = await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}/keys` });
    expect(listed.json().data.map((x: { id: string }) => x.id)).toEqual([k.id]);
    // Org key listing excludes agent keys.
    expect((await org.req({ method: 'GET', url: '/api/v1/api-keys?limit=100' })).json().data.some((x: { id: string }) => x.id === k.id)).toBe(false);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/agents/${b.id}/keys/${k.id}` })).statusCode).toBe(404);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/agents/${a.id}/keys/${k.id}` })).statusCode).toBe(204);
    expect((await org.req({ key: k.key, method: 'GET', url: `/api/v1/agents/${a.id}` })).statusCode).toBe(401);
  });

  it('need admin to create', async ({ org }) => {
    const a = await register(org);
    const dev = await createKey(org, { scopes: ['agent:read', 'agent:write'] });
    expect((await org.req({ key: dev.key, method: 'POST', url: `/api/v1/agents/${a.id}/keys`, payload: { name: 'x' } })).statusCode).toBe(403);
  });
});

describe('monthOf (the budget month, UTC)', () => {
  it('answers the month of each date, across month and year ends, in any order', () => {
    const at = (iso: string) => monthOf(new Date(iso));
    expect(at('2026-01-31T23:59:59.999Z')).toBe('2026-01');
    expect(at('2026-02-01T00:00:00.000Z')).toBe('2026-02');
    expect(at('2026-01-15T12:00:00.000Z')).toBe('2026-01');
    expect(at('2026-12-31T23:59:59.999Z')).toBe('2026-12');
    expect(at('2027-01-01T00:00:00.000Z')).toBe('2027-01');
    expect(at('2026-02-28T23:59:59.999+01:00')).toBe('2026-02');
    expect(at('2026-03-01T00:30:00.000+01:00')).toBe('2026-02');
    // Years below 100 are years, not 1900 + year.
    expect(at('0050-03-10T00:00:00.000Z')).toBe('0050-03');
    expect(at('1950-03-10T00:00:00.000Z')).toBe('1950-03');
    expect(() => monthOf(new Date(Number.NaN))).toThrow(RangeError);
  });
});
