/** Security hardening (docs/decisions.md, "Security hardening"): proxies, JWTs, CSV formulas. */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { parseConfig } from '../src/config.js';
import { lifetimeWithin } from '../src/http/auth.js';
import { describe, expect, it, test } from './fixture.js';
import { createKey, JWT_AUDIENCE, JWT_ISSUER, JWT_SECRET, type TestApp, type TestOrg } from './helpers.js';

// One proxy in front: only the hop it appends to X-Forwarded-For is believed.
test.override({ appEnv: { TRUST_PROXY: '1' } });

const health = (app: TestApp, headers: Record<string, string>) => app.app.inject({ method: 'GET', url: '/api/v1/health', headers, remoteAddress: '127.0.0.1' });

describe('TRUST_PROXY', () => {
  it('does not let a client-written X-Forwarded-For pass a key allowlist', async ({ app, org }) => {
    const k = await createKey(org, { scopes: ['agent:read'], ipAllowlist: ['10.1.2.3'] });
    // The client wrote "10.1.2.3"; the proxy appended the address it really came from.
    const forged = await health(app, { 'x-api-key': k.key, 'x-forwarded-for': '10.1.2.3, 203.0.113.9' });
    expect(forged.statusCode).toBe(403);
    // The same caller really at 10.1.2.3, as the proxy reports it, passes.
    expect((await health(app, { 'x-api-key': k.key, 'x-forwarded-for': '10.1.2.3' })).statusCode).toBe(200);
  });

  it('takes a hop count or proxy addresses/CIDRs, and refuses plain true in production', () => {
    expect(parseConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(parseConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).TRUST_PROXY).toEqual(['10.0.0.0/8', '127.0.0.1']);
    expect(parseConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(() => parseConfig({ TRUST_PROXY: 'proxy.example' })).toThrow(/TRUST_PROXY/);
    expect(() => parseConfig({ TRUST_PROXY: 'true', NODE_ENV: 'production' })).toThrow(/TRUST_PROXY: "true" trusts every/);
  });
});

describe('JWT verification', () => {
  const secret = new TextEncoder().encode(JWT_SECRET);
  const claims = (org: TestOrg) => ({ sub: randomUUID(), org_id: org.orgId, role: 'viewer' });
  const bearer = (app: TestApp, token: string) => health(app, { authorization: `Bearer ${token}` });
  const base = (org: TestOrg) => new SignJWT(claims(org)).setProtectedHeader({ alg: 'HS256' }).setIssuer(JWT_ISSUER).setAudience(JWT_AUDIENCE);

  it('accepts a short-lived token with issuer, audience, sub and exp', async ({ app, org }) => {
    expect((await bearer(app, await base(org).setIssuedAt().setExpirationTime('5m').sign(secret))).statusCode).toBe(200);
  });

  it('refuses a token without exp, or one that lives longer than AUTH_JWT_MAX_AGE_SECONDS (401)', async ({ app, org }) => {
    for (const token of [
      await base(org).setIssuedAt().sign(secret),
      await base(org).setIssuedAt().setExpirationTime('30d').sign(secret),
      await base(org).setExpirationTime('10y').sign(secret),
    ]) {
      const res = await bearer(app, token);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHORIZED');
    }
  });

  it('refuses a token without issuer or audience, and one signed with another HMAC algorithm', async ({ app, org }) => {
    const noIss = await new SignJWT(claims(org)).setProtectedHeader({ alg: 'HS256' }).setAudience(JWT_AUDIENCE).setExpirationTime('5m').sign(secret);
    const noAud = await new SignJWT(claims(org)).setProtectedHeader({ alg: 'HS256' }).setIssuer(JWT_ISSUER).setExpirationTime('5m').sign(secret);
    const hs512 = await new SignJWT(claims(org)).setProtectedHeader({ alg: 'HS512' }).setIssuer(JWT_ISSUER).setAudience(JWT_AUDIENCE).setExpirationTime('5m').sign(secret);
    for (const token of [noIss, noAud, hs512]) expect((await bearer(app, token)).statusCode).toBe(401);
  });

  it('bounds the lifetime from iat and from now', () => {
    const now = 1_800_000_000_000;
    const s = now / 1000;
    expect(lifetimeWithin({ exp: s + 3600, iat: s }, 3600, now)).toBe(true);
    expect(lifetimeWithin({ exp: s + 3601, iat: s }, 3600, now)).toBe(false);
    expect(lifetimeWithin({ exp: s + 60, iat: s - 7200 }, 3600, now)).toBe(false);
    expect(lifetimeWithin({ exp: s + 3601 }, 3600, now)).toBe(false);
    expect(lifetimeWithin({}, 3600, now)).toBe(false);
  });

  it('refuses unsafe JWT configurations at start with a clear message', () => {
    const long = 'x'.repeat(32);
    const ok = { AUTH_JWT_ISSUER: 'https://idp', AUTH_JWT_AUDIENCE: 'agov' };
    expect(() => parseConfig({ ...ok, AUTH_JWT_SECRET: long })).not.toThrow();
    expect(() => parseConfig({ ...ok, AUTH_JWT_SECRET: 'x'.repeat(31) })).toThrow(/AUTH_JWT_SECRET: must be at least 32 bytes/);
    expect(() => parseConfig({ ...ok, AUTH_JWT_SECRET: long, AUTH_JWKS_URL: 'https://idp/jwks' })).toThrow(/both set/);
    expect(() => parseConfig({ AUTH_JWT_SECRET: long, AUTH_JWT_AUDIENCE: 'agov' })).toThrow(/AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE are required/);
    expect(() => parseConfig({ AUTH_JWKS_URL: 'https://idp/jwks', AUTH_JWT_ISSUER: 'https://idp' })).toThrow(/required/);
    // Without JWT authentication, neither is needed.
    expect(() => parseConfig({})).not.toThrow();
  });
});

describe('CSV exports', () => {
  it('escape cells that a spreadsheet would run as formulas', async ({ org }) => {
    const agent = await org.req({
      method: 'POST', url: '/api/v1/agents',
      payload: { agentId: `csv-${randomUUID()}`, name: 'Csv', type: 'chatbot', platform: 'custom', environment: 'production' },
    });
    const agentId = agent.json().data.agentId as string;
    const names = ['=1+2', '+SUM(A1)', '-3+4', '@cmd', '\tTAB'];
    const ingest = await org.req({
      method: 'POST', url: '/api/v1/traces/ingest',
      payload: { traces: names.map((spanName, i) => ({ traceId: `csv-${i}`, agentId, spanType: 'root', spanName, timestamp: new Date().toISOString() })) },
    });
    expect(ingest.json().accepted).toBe(names.length);
    const csv = await org.req({ method: 'GET', url: `/api/v1/traces/export?format=csv` });
    expect(csv.statusCode).toBe(200);
    const cells = csv.body.split(/[\n,]/).map((c) => c.replace(/^"|"$/g, ''));
    for (const n of names) {
      expect(cells).toContain(`'${n}`);
      expect(cells).not.toContain(n);
    }
  });
});
