import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { agents, apiKeys } from '../src/db/schema/index.js';
import { insertKey } from '../src/domains/api-keys/service.js';
import { generateKey } from '../src/domains/api-keys/key-material.js';
import { describe, expect, it } from './fixture.js';
import { createKey, createOrg, signJwt, type TestApp } from './helpers.js';

const health = (app: TestApp, headers: Record<string, string>, extra: object = {}) =>
  app.app.inject({ method: 'GET', url: '/api/v1/health', headers, ...extra });

describe('API key authentication', () => {
  it('401 UNAUTHORIZED without credentials, with a garbage key, or a malformed Authorization header', async ({ app }) => {
    for (const headers of [{}, { 'x-api-key': 'svc_prod_nope' }, { 'x-api-key': 'x' }, { authorization: 'Basic abc' }, { authorization: 'Bearer' }] as Record<string, string>[]) {
      const res = await health(app, headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHORIZED');
    }
  });

  it('accepts the key in X-API-Key and as a Bearer token', async ({ app, org }) => {
    expect((await health(app, { 'x-api-key': org.key })).statusCode).toBe(200);
    expect((await health(app, { authorization: `Bearer ${org.key}` })).statusCode).toBe(200);
  });

  it('refuses an inactive key and an expired key with 401', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    await org.req({ method: 'PATCH', url: `/api/v1/api-keys/${k.id}`, payload: { isActive: false } });
    expect((await health(app, { 'x-api-key': k.key })).statusCode).toBe(401);

    const key = generateKey('production');
    await insertKey(app.database.db, {
      organizationId: org.orgId, key, name: 'old', environment: 'production', scopes: ['agent:read'], createdBy: 'test',
      expiresAt: new Date(app.clock.now().getTime() - 1000),
    });
    const res = await health(app, { 'x-api-key': key });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.message).toMatch(/expired/);
  });

  it('a key stops working when the clock passes its expiresAt, even while cached', async ({ app, org }) => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    const k = await createKey(org, { scopes: ['agent:read'], expiresAt: expiresAt.toISOString() });
    expect((await health(app, { 'x-api-key': k.key })).statusCode).toBe(200);
    app.clock.set(expiresAt.getTime() - 1);
    expect((await health(app, { 'x-api-key': k.key })).statusCode).toBe(200);
    app.clock.set(expiresAt);
    const res = await health(app, { 'x-api-key': k.key });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.message).toMatch(/expired/);
    app.clock.set(Date.now());
  });

  it('a deleted or rotated key stops working at once (cache invalidated)', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await health(app, { 'x-api-key': k.key })).statusCode).toBe(200); // now cached
    const rot = await org.req({ method: 'POST', url: `/api/v1/api-keys/${k.id}/rotate` });
    expect(rot.statusCode).toBe(200);
    const fresh = rot.json().data.key as string;
    expect(fresh).not.toBe(k.key);
    expect((await health(app, { 'x-api-key': k.key })).statusCode).toBe(401);
    expect((await health(app, { 'x-api-key': fresh })).statusCode).toBe(200);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/api-keys/${k.id}` })).statusCode).toBe(204);
    expect((await health(app, { 'x-api-key': fresh })).statusCode).toBe(401);
  });

  it('403 when the caller IP is outside the key allowlist; CIDR ranges match', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'], ipAllowlist: ['10.0.0.0/8', '192.168.1.7'] });
    expect((await health(app, { 'x-api-key': k.key }, { remoteAddress: '10.20.30.40' })).statusCode).toBe(200);
    expect((await health(app, { 'x-api-key': k.key }, { remoteAddress: '192.168.1.7' })).statusCode).toBe(200);
    const res = await health(app, { 'x-api-key': k.key }, { remoteAddress: '172.16.0.1' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
  });

  it('403 outside the organization allowlist and for environments not allowed', async ({ app }) => {
    const other = await createOrg(app, 'Locked');
    const dev = await createKey(other, { environment: 'development', scopes: ['agent:read'] });
    const patch = await other.req({
      method: 'PATCH', url: '/api/v1/settings/security', remoteAddress: '10.1.1.1',
      payload: { ip_allowlist: ['10.0.0.0/8'], allowed_environments: ['production'] },
    });
    expect(patch.statusCode).toBe(200);
    expect((await health(app, { 'x-api-key': other.key }, { remoteAddress: '10.9.9.9' })).statusCode).toBe(200);
    expect((await health(app, { 'x-api-key': other.key }, { remoteAddress: '127.0.0.1' })).statusCode).toBe(403);
    const envRes = await health(app, { 'x-api-key': dev.key }, { remoteAddress: '10.9.9.9' });
    expect(envRes.statusCode).toBe(403);
    expect(envRes.json().error.message).toMatch(/development/);
  });

  it('records usage without a write per request (flushed in one statement)', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    for (let i = 0; i < 3; i++) await health(app, { 'x-api-key': k.key });
    const [before] = await app.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.id));
    expect(before.usageCount).toBe(0);
    await app.app.deps.usage.flush();
    const [after] = await app.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.id));
    expect(after.usageCount).toBe(3);
    expect(after.lastUsedAt).toBeInstanceOf(Date);
  });
});

describe('roles and scopes', () => {
  it('a read-only key is a viewer: 403 on admin routes', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    for (const [method, url] of [['GET', '/api/v1/api-keys'], ['GET', '/api/v1/audit-logs'], ['GET', '/api/v1/settings/security']] as const) {
      const res = await app.app.inject({ method, url, headers: { 'x-api-key': k.key } });
      expect(res.statusCode, url).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
    }
  });

  it('agent-scoped keys are refused on routes that do not accept them', async ({ app, org }) => {
    const [agent] = await app.database.db
      .insert(agents)
      .values({ organizationId: org.orgId, agentId: `bot-${randomUUID()}`, name: 'bot', type: 'chatbot', platform: 'custom', environment: 'production' })
      .returning();
    const key = generateKey('production');
    await insertKey(app.database.db, {
      organizationId: org.orgId, key, name: 'agent', environment: 'production', scopes: ['trace:write', 'policy:read', 'agent:read'],
      createdBy: 'test', agentId: agent.id,
    });
    const res = await health(app, { 'x-api-key': key });
    expect(res.statusCode).toBe(403);
  });
});

describe('JWT authentication', () => {
  it('accepts a valid token and creates the user on first sign-in', async ({ app, org }) => {
    const sub = randomUUID();
    const token = await signJwt({ sub, org_id: org.orgId, role: 'admin', email: 'ada@example.com', name: 'Ada' });
    const res = await app.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    const created = await createKey({ ...org, req: (o) => app.app.inject({ ...o, headers: { authorization: `Bearer ${token}` } }) }, {});
    expect(created.id).toBeTruthy();
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceId=${created.id}` });
    expect(audit.json().data[0]).toMatchObject({ action: 'api_key.create', userId: sub, userEmail: 'ada@example.com', userName: 'Ada' });
  });

  it('401 for a wrong signature, an unknown organization or a missing role; 403 for a viewer on admin routes', async ({ app, org }) => {
    const sub = randomUUID();
    const cases = [
      await signJwt({ sub, org_id: org.orgId, role: 'admin' }, 'another-secret-another-secret-another-secret'),
      await signJwt({ sub, org_id: randomUUID(), role: 'admin' }),
      await signJwt({ sub, org_id: org.orgId, role: 'superuser' }),
      'not.a.jwt',
    ];
    for (const token of cases) {
      expect((await health(app, { authorization: `Bearer ${token}` })).statusCode).toBe(401);
    }
    const viewer = await signJwt({ sub, org_id: org.orgId, role: 'viewer' });
    expect((await health(app, { authorization: `Bearer ${viewer}` })).statusCode).toBe(200);
    expect((await app.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: { authorization: `Bearer ${viewer}` } })).statusCode).toBe(403);
  });
});
