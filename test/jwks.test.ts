import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

// A real identity provider stand-in: an HTTP server on loopback publishing a JWKS.
let idp: Server;
let t: TestApp;
let org: TestOrg;
let sign: (claims: Record<string, unknown>, opts?: { issuer?: string; audience?: string }) => Promise<string>;
let foreign: (claims: Record<string, unknown>) => Promise<string>;

beforeAll(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const other = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  idp = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/.well-known/jwks.json`;
  t = await createTestApp({ AUTH_JWT_SECRET: '', AUTH_JWKS_URL: url, AUTH_JWT_ISSUER: 'https://idp.test', AUTH_JWT_AUDIENCE: 'agov' });
  org = await createOrg(t);
  sign = (claims, opts = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(opts.issuer ?? 'https://idp.test')
      .setAudience(opts.audience ?? 'agov')
      .setExpirationTime('5m')
      .sign(privateKey);
  foreign = (claims) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer('https://idp.test').setAudience('agov').setExpirationTime('5m').sign(other.privateKey);
});
afterAll(async () => {
  await t.close();
  idp.close();
});

const health = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/health', headers: { authorization: `Bearer ${token}` } });

describe('JWT from an identity provider (JWKS)', () => {
  it('accepts an RS256 token signed by a published key, with the configured issuer and audience', async () => {
    const res = await health(await sign({ sub: randomUUID(), org_id: org.orgId, role: 'viewer' }));
    expect(res.statusCode).toBe(200);
  });

  it('refuses a wrong issuer, a wrong audience, or a key the provider does not publish (401)', async () => {
    const claims = { sub: randomUUID(), org_id: org.orgId, role: 'admin' };
    for (const token of [
      await sign(claims, { issuer: 'https://evil.test' }),
      await sign(claims, { audience: 'someone-else' }),
      await foreign(claims),
    ]) {
      const res = await health(token);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHORIZED');
    }
  });
});
