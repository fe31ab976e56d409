/** Failed authentications are limited per client IP (docs/decisions.md, "Failed authentication per IP"). */
import { randomInt } from 'node:crypto';
import { generateKey } from '../src/domains/api-keys/key-material.js';
import { describe, expect, it, test } from './fixture.js';

const LIMIT = 3;
test.override({ appEnv: { RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: String(LIMIT) } });

// Addresses of this run only: with REDIS_URL every test file shares the counters.
const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

describe('failed authentication per IP', () => {
  it('answers 429 to the N+1th bad key from one IP, keeps other IPs working, and lets the window pass', async ({ app, org }) => {
    const [a, b] = [randomIp(), randomIp()];
    const bad = generateKey('production');
    const call = (remoteAddress: string, key: string) => org.req({ method: 'GET', url: '/api/v1/teams', key, remoteAddress });

    for (let i = 1; i <= LIMIT; i++) {
      const res = await call(a, bad);
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(LIMIT - i));
    }
    const limited = await call(a, bad);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['x-ratelimit-limit']).toBe(String(LIMIT));
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
    // The address is refused for the rest of the window; other addresses are not.
    expect((await call(a, bad)).statusCode).toBe(429);
    expect((await call(b, org.key)).statusCode).toBe(200);
    expect((await call(b, bad)).statusCode).toBe(401);
    // A key this instance already holds as valid still passes (it costs no lookup); a valid key it
    // has not looked up yet is refused like any other until the window ends.
    expect((await call(a, org.key)).statusCode).toBe(200);
    const fresh = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'fresh', environment: 'production' }, remoteAddress: b });
    expect(fresh.statusCode).toBe(201);
    expect((await call(a, fresh.json().data.key)).statusCode).toBe(429);

    app.clock.advance(60_000);
    expect((await call(a, fresh.json().data.key)).statusCode).toBe(200);
    expect((await call(a, bad)).statusCode).toBe(401);
  });

  it('does not count successful requests', async ({ org }) => {
    const ip = randomIp();
    for (let i = 0; i < LIMIT + 2; i++) {
      expect((await org.req({ method: 'GET', url: '/api/v1/teams', remoteAddress: ip })).statusCode).toBe(200);
    }
    expect((await org.req({ method: 'GET', url: '/api/v1/teams', key: generateKey('production'), remoteAddress: ip })).statusCode).toBe(401);
  });
});
