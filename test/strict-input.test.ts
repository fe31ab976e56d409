/**
 * Strict inputs (docs/decisions.md "Strict inputs"): unknown body fields and query parameters are
 * 422 naming them (with a did-you-mean), only JSON bodies are read, an empty or missing body is `{}`
 * where the body is optional, bounds speak the route's own bound, a wrong method is 405 with Allow.
 */
import { describe, expect, it } from './fixture.js';

const agentBody = (agentId: string) => ({ agentId, name: 'Strict', type: 'chatbot', platform: 'custom', environment: 'development' });

describe('unknown body fields', () => {
  it('refuses a camelCase name on a snake_case input, says which was meant, and changes nothing', async ({ org }) => {
    const before = await org.req({ method: 'GET', url: '/api/v1/settings/security' });
    const res = await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { defaultKeyExpiryDays: 7 } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({
      code: 'VALIDATION_ERROR',
      fields: { defaultKeyExpiryDays: 'unknown field (did you mean default_key_expiry_days?)' },
    });
    expect((await org.req({ method: 'GET', url: '/api/v1/settings/security' })).json()).toEqual(before.json());
  });

  it('names unknown keys at any depth, keeps free-form records free', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { ...agentBody('strict-1'), colour: 'red' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toEqual({ colour: 'unknown field' });
    const ok = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { ...agentBody('strict-2'), metadata: { anything: { goes: 1 } } } });
    expect(ok.statusCode).toBe(201);
    const nested = await org.req({
      method: 'POST', url: '/api/v1/traces/ingest',
      payload: { traces: [{ traceId: 'strict-t1', agentId: 'strict-2', sdkExtra: 1 }], batchNote: 'x' },
    });
    expect(nested.statusCode).toBe(422);
    expect(nested.json().error.fields).toEqual({ batchNote: 'unknown field' });
  });

  it('reports an unknown field together with the other problems', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/teams', payload: { nmae: 'x' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toMatchObject({ nmae: 'unknown field (did you mean name?)', name: expect.any(String) });
  });

  it('refuses a body on an operation that takes none', async ({ org }) => {
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: agentBody('strict-3') })).json().data;
    await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/pause`, payload: {} });
    const res = await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/resume`, payload: { reason: 'x' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toEqual({ reason: 'unknown field' });
  });
});

describe('trace ingest items stay tolerant', () => {
  it('accepts and drops an unknown item field', async ({ org }) => {
    await org.req({ method: 'POST', url: '/api/v1/agents', payload: agentBody('strict-ingest') });
    const res = await org.req({
      method: 'POST', url: '/api/v1/traces/ingest',
      payload: { traces: [{ traceId: 'strict-tolerant', agentId: 'strict-ingest', sdkVersion: '9.9', name: 'n' }] },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json().data ?? res.json()).toMatchObject({ accepted: 1 });
    const list = await org.req({ method: 'GET', url: '/api/v1/traces?limit=100' });
    const trace = list.json().data.find((t: { traceId: string }) => t.traceId === 'strict-tolerant');
    expect(trace).toBeDefined();
    expect(trace).not.toHaveProperty('sdkVersion');
  });
});

describe('unknown query parameters', () => {
  it('names a typo of a filter and the parameter it meant', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/traces?startDate=2024-01-01T00:00:00Z' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toEqual({ startDate: 'unknown field (did you mean startTime?)' });
  });

  it('refuses a query on an operation that takes none; path ids keep their 404', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/settings/security?verbose=1' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toEqual({ verbose: 'unknown field' });
    expect((await org.req({ method: 'GET', url: '/api/v1/agents/not-a-uuid' })).statusCode).toBe(404);
  });

  it('names parameters that share a name with Object.prototype members, and __proto__', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/agents?valueOf=1&__proto__=1' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toEqual({ valueOf: 'unknown field', query: 'unknown field __proto__' });
  });
});

describe('media types and empty bodies', () => {
  it('answers 415 to text/plain, never a field named _', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/teams', headers: { 'content-type': 'text/plain' }, payload: 'name=x' });
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('an operation without a body still answers 415, 400 and 413 to a bad one, as its document says', async ({ org }) => {
    const url = '/api/v1/api-keys/00000000-0000-4000-8000-000000000000/rotate';
    expect((await org.req({ method: 'POST', url, headers: { 'content-type': 'text/plain' }, payload: 'x' })).statusCode).toBe(415);
    expect((await org.req({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{bad' })).statusCode).toBe(400);
    expect((await org.req({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ a: 'x'.repeat(2_000_000) }) })).statusCode).toBe(413);
  });

  it('names a whole-body problem `body`', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/teams', headers: { 'content-type': 'application/json' }, payload: '[1]' });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(res.json().error.fields)).toEqual(['body']);
  });

  it('accepts an empty JSON body, or none, where the body is optional', async ({ org }) => {
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: agentBody('strict-empty') })).json().data;
    const json = { 'content-type': 'application/json' };
    const paused = await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/pause`, headers: json, payload: '' });
    expect(paused.statusCode).toBe(200);
    expect(paused.json().data.status).toBe('paused');
    const resumed = await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/resume`, headers: json, payload: '' });
    expect(resumed.statusCode).toBe(200);
    expect((await org.req({ method: 'POST', url: `/api/v1/agents/${agent.id}/pause` })).statusCode).toBe(200);
    const killed = await org.req({ method: 'POST', url: '/api/v1/agents/kill-switch', headers: json, payload: '' });
    expect(killed.statusCode).toBe(200);
  });

  it('names the required fields when a required body is missing', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/teams' });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(res.json().error.fields)).toEqual(['name']);
  });
});

describe('bounds', () => {
  it('speaks the route bound, not the safe-integer one', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/agents?limit=99999999999999999999' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields.limit).toMatch(/<= ?100\b/);
    const neg = await org.req({ method: 'GET', url: '/api/v1/agents?offset=-99999999999999999999' });
    expect(neg.json().error.fields.offset).toMatch(/>= ?0\b/);
  });
});

describe('405', () => {
  it('answers a known path with the wrong method 405 with Allow, also under the deprecated alias', async ({ org }) => {
    const res = await org.req({ method: 'PUT', url: '/api/v1/agents' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
    expect(res.json().error.code).toBe('METHOD_NOT_ALLOWED');
    const alias = await org.req({ method: 'DELETE', url: '/api/settings/security' });
    expect(alias.statusCode).toBe(405);
    expect(alias.headers.allow).toBe('GET, HEAD, PATCH');
    expect(alias.headers.deprecation).toBe('true');
    expect((await org.req({ method: 'GET', url: '/api/v1/nope' })).statusCode).toBe(404);
  });
});

describe('a change that changes nothing', () => {
  /** PATCHes `url` with `payload` twice: the first changes, the second (the same values) must write nothing. */
  async function patchTwice(org: { req: (o: object) => Promise<{ statusCode: number; json(): any }> }, method: string, url: string, payload: object) {
    const audits = async () => (await org.req({ method: 'GET', url: '/api/v1/audit-logs?limit=1' })).json().meta.total as number;
    const first = await org.req({ method, url, payload });
    expect(first.statusCode, url).toBe(200);
    const count = await audits();
    const second = await org.req({ method, url, payload });
    expect(second.statusCode, url).toBe(200);
    expect(second.json().data, url).toEqual(first.json().data);
    expect(await audits(), `${url} audited a change that changed nothing`).toBe(count);
  }

  it('writes no audit entry and keeps updatedAt, for every updatable resource', async ({ org }) => {
    await patchTwice(org, 'PATCH', '/api/v1/settings/security', { default_key_expiry_days: 9, dashboard_widgets: ['a', 'b'] });
    await patchTwice(org, 'PATCH', '/api/v1/settings/organization', { plan: 'starter', compliance_frameworks: ['SOC2'] });
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: agentBody('strict-noop') })).json().data;
    await patchTwice(org, 'PATCH', `/api/v1/agents/${agent.id}`, { name: 'Renamed', tags: ['x'], metadata: { b: 1, a: { c: [1, 2] } } });
    const key = (await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'k', environment: 'production' } })).json().data;
    await patchTwice(org, 'PATCH', `/api/v1/api-keys/${key.id}`, { name: 'k2', scopes: ['agent:read'], expiresAt: '2999-01-01T00:00:00.000Z' });
    const team = (await org.req({ method: 'POST', url: '/api/v1/teams', payload: { name: 'Strict team' } })).json().data;
    await patchTwice(org, 'PATCH', `/api/v1/teams/${team.id}`, { name: 'Strict team 2', description: 'd' });
    const filter = await org.req({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: 'f', resource_type: 'agents' } });
    expect(filter.statusCode).toBe(201);
    await patchTwice(org, 'PUT', `/api/v1/saved-filters/${filter.json().data.id}`, { name: 'f2', filter_config: { status: 'active' }, is_default: true });
  });
});

describe('the OpenAPI document tells the truth about open objects', () => {
  it('documents trace ingest items as accepting unknown keys', async ({ app }) => {
    const doc = (await app.app.inject({ method: 'GET', url: '/api-docs.json' })).json();
    expect(doc.components.schemas.IngestTraceItem.additionalProperties).toEqual({});
  });
});
