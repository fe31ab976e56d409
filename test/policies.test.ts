import { describe, expect, it } from './fixture.js';
import { createKey, createOrg, type TestOrg } from './helpers.js';
import { describeOnTwoInstances } from './instances.js';

type Org = TestOrg;
const base = { name: 'No PII out', policyType: 'data_restriction', ruleDefinition: { detect: ['email'], scope: 'output' }, enforcementMode: 'block' };

async function create(org: Org, body: Record<string, unknown> = {}) {
  const res = await org.req({ method: 'POST', url: '/api/v1/policies', payload: { ...base, ...body } });
  if (res.statusCode !== 201) throw new Error(`policy creation failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
}
async function agent(org: Org) {
  const res = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${Math.random().toString(36).slice(2)}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } });
  return res.json().data as { id: string };
}
const post = (org: Org, payload: Record<string, unknown>) => org.req({ method: 'POST', url: '/api/v1/policies', payload });
const patch = (org: Org, id: string, payload: Record<string, unknown>) => org.req({ method: 'PATCH', url: `/api/v1/policies/${id}`, payload });
const audit = async (org: Org, id: string) => (await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=policy&resourceId=${id}` })).json().data;

describe('policy CRUD', () => {
  it('creates with the spec defaults and reads it back; audited with after', async ({ org }) => {
    const p = await create(org);
    expect(p).toMatchObject({
      organizationId: org.orgId, name: 'No PII out', description: null, policyType: 'data_restriction', appliesToAgents: [], appliesToEnvironments: [],
      ruleDefinition: { detect: ['email'], scope: 'output' }, enforcementMode: 'block', isActive: true, alertOnViolation: true, alertChannels: [],
      complianceFrameworks: [], complianceControls: [], severity: 'warning', actions: ['log'], agentId: null, priority: 100, maxRequests: null,
      timeWindowSeconds: null, notifyWebhookUrl: null, notifyEmail: [], notes: null, tags: [],
    });
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/${p.id}` })).json().data).toEqual(p);
    const [entry] = await audit(org, p.id);
    expect(entry).toMatchObject({ action: 'policy.create', afterState: { id: p.id, name: 'No PII out' } });
  });

  it('refuses each bound with 422 naming the field', async ({ org }) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(256) }, 'name'],
      [{ priority: -1 }, 'priority'],
      [{ priority: 1.5 }, 'priority'],
      [{ notifyWebhookUrl: `https://example.com/${'a'.repeat(500)}` }, 'notifyWebhookUrl'],
      [{ notifyWebhookUrl: 'not a url' }, 'notifyWebhookUrl'],
      [{ enforcementMode: 'require_approval' }, 'enforcementMode'],
      [{ severity: 'high' }, 'severity'],
      [{ actions: ['page'] }, 'actions.0'],
      [{ appliesToEnvironments: ['prod'] }, 'appliesToEnvironments.0'],
      [{ notifyEmail: ['nope'] }, 'notifyEmail.0'],
      [{ policyType: 'magic' }, 'policyType'],
      [{ maxRequests: 10 }, 'timeWindowSeconds'],
      [{ timeWindowSeconds: 60 }, 'maxRequests'],
    ];
    for (const [body, field] of cases) {
      const res = await post(org, { ...base, ...body });
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.json().error.fields), JSON.stringify(body)).toContain(field);
    }
    for (const field of ['name', 'policyType', 'ruleDefinition', 'enforcementMode']) {
      const { [field]: _omitted, ...rest } = base as Record<string, unknown>;
      const res = await post(org, rest);
      expect(res.statusCode).toBe(422);
      expect(Object.keys(res.json().error.fields)).toContain(field);
    }
    // The edges that are allowed.
    expect((await create(org, { priority: 0, name: 'x'.repeat(255), maxRequests: 5, timeWindowSeconds: 60 })).priority).toBe(0);
  });

  it('validates ruleDefinition per policyType, naming ruleDefinition.<path>', async ({ org }) => {
    const wrong: [string, unknown, string][] = [
      ['access_control', { allowActions: 'read*' }, 'ruleDefinition.allowActions'],
      ['data_restriction', { detect: ['dna'], scope: 'output' }, 'ruleDefinition.detect.0'],
      ['action_approval', { actions: [] }, 'ruleDefinition.actions'],
      ['cost_limit', { maxCostUsdPerRequest: -1 }, 'ruleDefinition.maxCostUsdPerRequest'],
      ['quality_threshold', { metric: 'error_rate', max: 2, windowMinutes: 5 }, 'ruleDefinition.max'],
      ['budget_cap', {}, 'ruleDefinition.maxMonthlyCostUsd'],
      ['injection_scan', { threshold: 1.5, scope: 'input' }, 'ruleDefinition.threshold'],
      ['output_classifier', { categories: ['pii'], blockOn: ['secrets'] }, 'ruleDefinition.blockOn.0'],
      ['custom', { validatorUrl: 'ftp://x', timeoutMs: 100, failurePolicy: 'fail' }, 'ruleDefinition.validatorUrl'],
      ['data_restriction', { detect: ['email'], scope: 'output', extra: 1 }, 'ruleDefinition.extra'],
    ];
    for (const [policyType, ruleDefinition, field] of wrong) {
      const res = await post(org, { ...base, policyType, ruleDefinition });
      expect(res.statusCode, policyType).toBe(422);
      expect(Object.keys(res.json().error.fields), policyType).toContain(field);
    }
    // The stored rule is the parsed one (the rule schema's defaults filled in).
    const oc = await create(org, { policyType: 'output_classifier', ruleDefinition: { categories: ['pii'] } });
    expect(oc.ruleDefinition).toEqual({ categories: ['pii'], blockOn: [] });
  });

  it('PATCH accepts every create field, audits before/after, and a no-op writes no audit', async ({ org }) => {
    const a = await agent(org);
    const p = await create(org);
    const res = await patch(org, p.id, { priority: 5, appliesToAgents: [a.id], appliesToEnvironments: ['production'], actions: ['log', 'alert'], maxRequests: 3, timeWindowSeconds: 60, notes: 'n' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ priority: 5, appliesToAgents: [a.id], appliesToEnvironments: ['production'], actions: ['log', 'alert'], maxRequests: 3, timeWindowSeconds: 60, notes: 'n' });
    const entries = await audit(org, p.id);
    expect(entries[0]).toMatchObject({ action: 'policy.update', beforeState: { priority: 100, appliesToAgents: [] }, afterState: { priority: 5, appliesToAgents: [a.id] } });
    // The same values again: nothing changes, no audit entry, updatedAt kept.
    const again = await patch(org, p.id, { priority: 5, notes: 'n' });
    expect(again.json().data.updatedAt).toBe(res.json().data.updatedAt);
    expect((await audit(org, p.id)).length).toBe(entries.length);
    // Clearing the window alone breaks the pair.
    expect(Object.keys((await patch(org, p.id, { maxRequests: null })).json().error.fields)).toEqual(['maxRequests']);
    expect((await patch(org, p.id, { maxRequests: null, timeWindowSeconds: null })).json().data.maxRequests).toBeNull();
  });

  it('PATCH changing policyType needs a ruleDefinition valid for the new type', async ({ org }) => {
    const p = await create(org);
    const bad = await patch(org, p.id, { policyType: 'budget_cap' });
    expect(bad.statusCode).toBe(422);
    expect(Object.keys(bad.json().error.fields)).toContain('ruleDefinition.maxMonthlyCostUsd');
    const wrongRule = await patch(org, p.id, { policyType: 'budget_cap', ruleDefinition: { maxMonthlyCostUsd: 0 } });
    expect(Object.keys(wrongRule.json().error.fields)).toEqual(['ruleDefinition.maxMonthlyCostUsd']);
    const ok = await patch(org, p.id, { policyType: 'budget_cap', ruleDefinition: { maxMonthlyCostUsd: 100 } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data).toMatchObject({ policyType: 'budget_cap', ruleDefinition: { maxMonthlyCostUsd: 100 } });
    // A ruleDefinition alone is checked against the stored type.
    expect(Object.keys((await patch(org, p.id, { ruleDefinition: { detect: ['email'], scope: 'output' } })).json().error.fields)).toContain('ruleDefinition.detect');
    // The stored rule is checked against the new type, with the other changes of the request.
    const ic = await create(org, { policyType: 'injection_scan', ruleDefinition: { threshold: 0.5, scope: 'input' } });
    const moved = await patch(org, ic.id, { policyType: 'cost_limit', priority: 1 });
    expect(Object.keys(moved.json().error.fields)).toEqual(expect.arrayContaining(['ruleDefinition.threshold', 'ruleDefinition.scope']));
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/${ic.id}` })).json().data).toMatchObject({ policyType: 'injection_scan', priority: 100 });
    const cl = await create(org, { policyType: 'cost_limit', ruleDefinition: { maxTokensPerRequest: 10 } });
    expect(Object.keys((await patch(org, cl.id, { policyType: 'budget_cap' })).json().error.fields)).toContain('ruleDefinition.maxMonthlyCostUsd');
  });

  it('agentId and appliesToAgents must name agents of the organization', async ({ app, org }) => {
    const mine = await agent(org);
    const other = await createOrg(app);
    const theirs = await agent(other);
    const res = await post(org, { ...base, agentId: theirs.id, appliesToAgents: [mine.id, theirs.id] });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(res.json().error.fields).sort()).toEqual(['agentId', 'appliesToAgents.1']);
    const p = await create(org, { agentId: mine.id, appliesToAgents: [mine.id] });
    expect(p.agentId).toBe(mine.id);
    expect(Object.keys((await patch(org, p.id, { agentId: theirs.id })).json().error.fields)).toEqual(['agentId']);
  });

  it('DELETE removes the policy (204, then 404) and audits the policy as it was', async ({ org }) => {
    const p = await create(org);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/policies/${p.id}` })).statusCode).toBe(204);
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/${p.id}` })).statusCode).toBe(404);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/policies/${p.id}` })).statusCode).toBe(404);
    expect((await audit(org, p.id))[0]).toMatchObject({ action: 'policy.delete', beforeState: { id: p.id }, afterState: null });
  });

  it("another organization's policy is 404 for every route", async ({ app, org }) => {
    const p = await create(org);
    const other = await createOrg(app);
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await other.req({ method, url: `/api/v1/policies/${p.id}`, payload: method === 'PATCH' ? { priority: 1 } : undefined });
      expect(res.statusCode, method).toBe(404);
    }
    expect((await other.req({ method: 'GET', url: '/api/v1/policies' })).json().meta.total).toBe(0);
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/${p.id}` })).json().data.priority).toBe(100);
  });

  it('scopes: policy:read reads, policy:write changes, agent-scoped keys are refused', async ({ org }) => {
    const p = await create(org);
    const reader = await createKey(org, { scopes: ['policy:read'] });
    expect((await org.req({ key: reader.key, method: 'GET', url: '/api/v1/policies' })).statusCode).toBe(200);
    expect((await org.req({ key: reader.key, method: 'POST', url: '/api/v1/policies', payload: base })).statusCode).toBe(403);
    const writer = await createKey(org, { scopes: ['policy:write'] });
    expect((await org.req({ key: writer.key, method: 'PATCH', url: `/api/v1/policies/${p.id}`, payload: { priority: 7 } })).statusCode).toBe(200);
    const a = await agent(org);
    const k = (await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/keys`, payload: { name: 'sdk' } })).json().data.key;
    for (const [method, url] of [['GET', '/api/v1/policies'], ['GET', `/api/v1/policies/${p.id}`], ['POST', '/api/v1/policies'], ['DELETE', `/api/v1/policies/${p.id}`]] as const) {
      expect((await org.req({ key: k, method, url, payload: method === 'POST' ? base : undefined })).statusCode, `${method} ${url}`).toBe(403);
    }
  });
});

describe('GET /policies', () => {
  it('filters by policyType, isActive, enforcementMode, agentId and search, in priority order', async ({ freshOrg: org }) => {
    const a = await agent(org);
    const p1 = await create(org, { name: 'Block emails', priority: 20 });
    const p2 = await create(org, { name: 'Costs', policyType: 'cost_limit', ruleDefinition: { maxTokensPerRequest: 1000 }, enforcementMode: 'warn', priority: 10, agentId: a.id });
    const p3 = await create(org, { name: 'Injection', description: 'jailbreak guard', policyType: 'injection_scan', ruleDefinition: { threshold: 0.7, scope: 'input' }, enforcementMode: 'monitor', isActive: false, appliesToAgents: [a.id] });
    const ids = async (q: string) => (await org.req({ method: 'GET', url: `/api/v1/policies${q}` })).json().data.map((p: { id: string }) => p.id);
    expect(await ids('')).toEqual([p2.id, p1.id, p3.id]);
    expect(await ids('?policyType=cost_limit')).toEqual([p2.id]);
    expect(await ids('?isActive=false')).toEqual([p3.id]);
    expect(await ids('?isActive=true')).toEqual([p2.id, p1.id]);
    expect(await ids('?enforcementMode=monitor')).toEqual([p3.id]);
    expect(await ids(`?agentId=${a.id}`)).toEqual([p2.id, p3.id]);
    expect(await ids('?search=JAILBREAK')).toEqual([p3.id]);
    expect(await ids('?search=emails')).toEqual([p1.id]);
    expect(await ids('?search=%25')).toEqual([]);
    const page = (await org.req({ method: 'GET', url: '/api/v1/policies?limit=1&offset=1' })).json();
    expect(page).toMatchObject({ data: [{ id: p1.id }], meta: { total: 3, limit: 1, offset: 1 } });
    expect((await org.req({ method: 'GET', url: '/api/v1/policies?isActive=yes' })).statusCode).toBe(422);
  });
});

describe('active policies cache', () => {
  it('sees every change of the same instance at once, in priority order', async ({ app, freshOrg: org }) => {
    const svc = app.container.services.policies;
    expect(await svc.activePolicies(org.orgId)).toEqual([]);
    const { version: v0 } = await svc.activeSnapshot(org.orgId);
    const p = await create(org, { priority: 50 });
    const q = await create(org, { priority: 50, name: 'second' });
    const first = await create(org, { priority: 1, name: 'first' });
    await create(org, { isActive: false, name: 'inactive' });
    const tieBreak = [p.id, q.id].sort();
    expect((await svc.activePolicies(org.orgId)).map((x) => x.id)).toEqual([first.id, ...tieBreak]);
    const s1 = await svc.activeSnapshot(org.orgId);
    expect(s1.version).toBeGreaterThan(v0);
    // Served from memory: the same frozen array, the same version.
    expect(await svc.activePolicies(org.orgId)).toBe(s1.policies);
    expect(Object.isFrozen(s1.policies)).toBe(true);
    await patch(org, first.id, { isActive: false });
    expect((await svc.activePolicies(org.orgId)).map((x) => x.id)).toEqual(tieBreak);
    await patch(org, p.id, { severity: 'critical' });
    expect((await svc.activePolicies(org.orgId)).find((x) => x.id === p.id)?.severity).toBe('critical');
    await org.req({ method: 'DELETE', url: `/api/v1/policies/${q.id}` });
    const last = await svc.activeSnapshot(org.orgId);
    expect(last.policies.map((x) => x.id)).toEqual([p.id]);
    expect(last.version).toBeGreaterThan(s1.version);
    // A no-op PATCH invalidates nothing: same snapshot.
    await patch(org, p.id, { severity: 'critical' });
    expect(await svc.activePolicies(org.orgId)).toBe(last.policies);
  });
});

// Two instances on one PostgreSQL and one Redis: a change through A reaches B's cache over pub/sub.
describeOnTwoInstances('active policies on two instances (PostgreSQL + Redis)', (apps) => {
  it('a change through one instance is seen by the other within a second', async () => {
    const { a, b } = apps;
    const org = await createOrg(a);
    const onB = () => b.container.services.policies.activePolicies(org.orgId);
    expect(await onB()).toEqual([]); // B caches the empty list
    const within = async (check: (ps: readonly { id: string; priority: number }[]) => boolean) => {
      const start = Date.now();
      while (Date.now() - start < 1000) {
        if (check(await onB())) return Date.now() - start;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('not seen within a second');
    };
    const p = await create(org);
    await within((ps) => ps.length === 1 && ps[0].id === p.id);
    await patch(org, p.id, { priority: 3 });
    await within((ps) => ps[0]?.priority === 3);
    await patch(org, p.id, { isActive: false });
    await within((ps) => ps.length === 0);
  });
});
