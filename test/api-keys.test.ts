import { describe, expect, it } from './fixture.js';
import { createKey, createOrg } from './helpers.js';

describe('/api-keys', () => {
  it('creates a key shown once, with the environment prefix, default scopes and default expiry', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'ci', environment: 'staging' } });
    expect(res.statusCode).toBe(201);
    const k = res.json().data;
    expect(k.key).toMatch(/^svc_stg_[0-9A-Za-z]{43}$/);
    expect(k.keyPrefix).toBe(k.key.slice(0, 15));
    expect(k.scopes).toEqual(['agent:read', 'agent:write', 'trace:read', 'trace:write']);
    const days = (Date.parse(k.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);

    const got = await org.req({ method: 'GET', url: `/api/v1/api-keys/${k.id}` });
    expect(got.statusCode).toBe(200);
    expect(got.json().data.key).toBeUndefined();
    expect(JSON.stringify(got.json())).not.toMatch(/hash/i);
    const list = await org.req({ method: 'GET', url: '/api/v1/api-keys?limit=100' });
    expect(list.json().meta).toMatchObject({ limit: 100, offset: 0 });
    expect(list.json().data.some((x: { id: string; key?: string }) => x.id === k.id && x.key === undefined)).toBe(true);
  });

  it('expiresAt null means no expiry; a past expiresAt is 422', async ({ org }) => {
    const k = await createKey(org, { expiresAt: null });
    expect((await org.req({ method: 'GET', url: `/api/v1/api-keys/${k.id}` })).json().data.expiresAt).toBeNull();
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'x', environment: 'production', expiresAt: '2001-01-01T00:00:00Z' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields.expiresAt).toMatch(/future/);
  });

  it('422 with fields for bad names, environments, scopes and IP allowlists', async ({ org }) => {
    const res = await org.req({
      method: 'POST', url: '/api/v1/api-keys',
      payload: { name: '', environment: 'prod', scopes: ['root'], ipAllowlist: ['10.0.0.0/33', '::1'] },
    });
    expect(res.statusCode).toBe(422);
    const fields = res.json().error.fields;
    expect(Object.keys(fields)).toEqual(expect.arrayContaining(['name', 'environment', 'scopes.0', 'ipAllowlist.0', 'ipAllowlist.1']));
  });

  it('updates only the given fields and audits before/after', async ({ org }) => {
    const k = await createKey(org, { name: 'before' });
    const res = await org.req({ method: 'PATCH', url: `/api/v1/api-keys/${k.id}`, payload: { name: 'after', scopes: ['trace:read'] } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ name: 'after', scopes: ['trace:read'], environment: 'production' });
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=api_key&resourceId=${k.id}` });
    const entries = audit.json().data;
    expect(entries.map((e: { action: string }) => e.action)).toEqual(['api_key.update', 'api_key.create']);
    expect(entries[0].beforeState.name).toBe('before');
    expect(entries[0].afterState.name).toBe('after');
    expect(JSON.stringify(entries)).not.toContain(k.key);
  });

  it("another organization's key is 404 and never listed", async ({ app, org }) => {
    const other = await createOrg(app, 'Other');
    const k = await createKey(org, {});
    for (const [method, url] of [['GET', `/api/v1/api-keys/${k.id}`], ['PATCH', `/api/v1/api-keys/${k.id}`], ['DELETE', `/api/v1/api-keys/${k.id}`], ['POST', `/api/v1/api-keys/${k.id}/rotate`]] as const) {
      const res = await other.req({ method, url, payload: method === 'PATCH' ? { name: 'x' } : undefined });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    const list = await other.req({ method: 'GET', url: '/api/v1/api-keys?limit=100' });
    expect(list.json().data.find((x: { id: string }) => x.id === k.id)).toBeUndefined();
  });

  it('a malformed id is 404, not 500', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/api-keys/not-a-uuid' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});
