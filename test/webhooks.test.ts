/** Webhooks CRUD: inputs, secrets, ADMIN only, organizations apart, audit (docs/decisions.md, "Webhooks"). */
import { randomUUID } from 'node:crypto';
import { createOrg, signJwt, withTestApp } from './helpers.js';
import { describe, expect, it } from './fixture.js';

const base = { name: 'ops', url: 'https://hooks.example.com/agov', eventTypes: ['agent_registered'] };

describe('webhooks CRUD', () => {
  it('creates with defaults and a whsec_ secret shown once, lists, gets, updates and deletes', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: base });
    expect(res.statusCode).toBe(201);
    const created = res.json().data;
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    expect(created).toMatchObject({ maxRetries: 5, retryBackoffSeconds: 60, timeoutSeconds: 30, isActive: true, agentIds: null, customHeaders: {}, successCount: 0, failureCount: 0 });

    const got = (await org.req({ method: 'GET', url: `/api/v1/webhooks/${created.id}` })).json().data;
    expect(got.secret).toBeUndefined();
    const list = (await org.req({ method: 'GET', url: '/api/v1/webhooks' })).json();
    expect(list.data.some((w: { id: string; secret?: string }) => w.id === created.id && w.secret === undefined)).toBe(true);

    const patched = await org.req({ method: 'PATCH', url: `/api/v1/webhooks/${created.id}`, payload: { isActive: false, eventTypes: ['agent_updated', 'trace_error'], customHeaders: { 'X-Team': 'ops' } } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ isActive: false, eventTypes: ['agent_updated', 'trace_error'], customHeaders: { 'X-Team': 'ops' } });

    const rotated = await org.req({ method: 'POST', url: `/api/v1/webhooks/${created.id}/rotate-secret` });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().data.id).toBe(created.id);
    expect(rotated.json().data.secret).not.toBe(created.secret);

    const audit = (await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceId=${created.id}&limit=10` })).json().data as { action: string }[];
    expect(audit.map((a) => a.action).sort()).toEqual(['webhook.create', 'webhook.rotate_secret', 'webhook.update']);
    expect(JSON.stringify(audit)).not.toContain(created.secret.slice(6));
    expect(JSON.stringify(audit)).not.toContain(rotated.json().data.secret.slice(6));

    expect((await org.req({ method: 'DELETE', url: `/api/v1/webhooks/${created.id}` })).statusCode).toBe(204);
    expect((await org.req({ method: 'GET', url: `/api/v1/webhooks/${created.id}` })).statusCode).toBe(404);
  });

  it('refuses bad inputs with 422 naming the field', async ({ org }) => {
    const post = (payload: object) => org.req({ method: 'POST', url: '/api/v1/webhooks', payload });
    const fieldsOf = async (payload: object) => {
      const r = await post(payload);
      expect(r.statusCode).toBe(422);
      return Object.keys(r.json().error.fields ?? {});
    };
    expect(await fieldsOf({ ...base, eventTypes: [] })).toContain('eventTypes');
    expect((await fieldsOf({ ...base, eventTypes: ['agent_exploded'] })).join()).toContain('eventTypes');
    expect(await fieldsOf({ ...base, url: 'ftp://example.com/x' })).toContain('url');
    expect(await fieldsOf({ ...base, url: 'https://user:pw@example.com/x' })).toContain('url');
    expect(await fieldsOf({ ...base, url: 'not a url' })).toContain('url');
    const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`X-H${i}`, 'v']));
    expect(await fieldsOf({ ...base, customHeaders: many })).toContain('customHeaders');
    expect(await fieldsOf({ ...base, customHeaders: { 'X-Service-Signature': 'sha256=forged' } })).toContain('customHeaders.X-Service-Signature');
    expect(await fieldsOf({ ...base, customHeaders: { 'webhook-signature': 'v1,x' } })).toContain('customHeaders.webhook-signature');
    expect(await fieldsOf({ ...base, customHeaders: { 'content-type': 'text/plain' } })).toContain('customHeaders.content-type');
    expect(await fieldsOf({ ...base, customHeaders: { 'X-Ok': 'line\r\nInjected: 1' } })).toContain('customHeaders.X-Ok');
    expect(await fieldsOf({ ...base, agentIds: [randomUUID()] })).toContain('agentIds.0');
    expect(await fieldsOf({ ...base, maxRetries: 11, timeoutSeconds: 0 })).toEqual(expect.arrayContaining(['maxRetries', 'timeoutSeconds']));
    expect(await fieldsOf({ ...base, secret: 'mine' })).toContain('secret');
  });

  it('refuses private targets in production mode (ALLOW_PRIVATE_TARGETS false)', async () => {
    await withTestApp({ ALLOW_PRIVATE_TARGETS: 'false' }, async (_t, org) => {
      for (const url of ['http://127.0.0.1:8080/x', 'http://localhost/x', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/x', 'http://[::1]/x']) {
        const r = await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: { ...base, url } });
        expect(r.statusCode, url).toBe(422);
        expect(r.json().error.fields.url).toMatch(/private/);
      }
      expect((await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: base })).statusCode).toBe(201);
    });
  });

  it('is ADMIN only: 403 for a developer, and another organization sees 404', async ({ app, org }) => {
    const created = (await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: base })).json().data;
    const dev = await signJwt({ sub: 'dev-1', org_id: org.orgId, role: 'developer' });
    const asDev = (method: 'GET' | 'POST', url: string, payload?: object) => app.app.inject({ method, url, payload, headers: { authorization: `Bearer ${dev}` } });
    expect((await asDev('GET', '/api/v1/webhooks')).statusCode).toBe(403);
    expect((await asDev('POST', '/api/v1/webhooks', base)).statusCode).toBe(403);
    expect((await asDev('GET', `/api/v1/webhooks/${created.id}`)).statusCode).toBe(403);

    const other = await createOrg(app, 'Other');
    for (const [method, url] of [
      ['GET', `/api/v1/webhooks/${created.id}`],
      ['PATCH', `/api/v1/webhooks/${created.id}`],
      ['DELETE', `/api/v1/webhooks/${created.id}`],
      ['POST', `/api/v1/webhooks/${created.id}/test`],
      ['POST', `/api/v1/webhooks/${created.id}/rotate-secret`],
      ['GET', `/api/v1/webhooks/${created.id}/deliveries`],
      ['POST', `/api/v1/webhooks/${created.id}/deliveries/${randomUUID()}/redeliver`],
    ] as const) {
      const r = await other.req({ method, url, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) });
      expect(r.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await other.req({ method: 'GET', url: '/api/v1/webhooks' })).json().meta.total).toBe(0);
  });
});
