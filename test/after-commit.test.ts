/**
 * Post-commit effects (cache invalidation over pub/sub) when Redis cannot take a publish: the change
 * is committed, so the caller gets its normal answer; the failure is logged and counted.
 *
 * The failure is injected at the SharedState boundary: a real redisState cannot be started against
 * a port nothing listens on (start-up waits for Redis on purpose), and stopping the shared Redis
 * would break every other test running on it. Everything else (rate limiter, subscriptions) is the
 * real configured state.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys } from '../src/db/schema/index.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';
import { createKey, createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

/** The configured state, except that every publish fails as it does with Redis unreachable. */
function publishesFail(inner: SharedState): SharedState {
  return {
    ...inner,
    hit: (k, w) => inner.hit(k, w),
    subscribe: (c, h) => inner.subscribe(c, h),
    onReconnect: (h) => inner.onReconnect(h),
    ping: () => inner.ping(),
    close: () => inner.close(),
    publish: async () => {
      throw new Error('Connection is closed.');
    },
  };
}

describe('with publishes failing (Redis down)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    const inner = process.env.REDIS_URL ? await redisState(process.env.REDIS_URL) : memoryState();
    t = await createTestApp({}, { state: publishesFail(inner) });
    org = await createOrg(t);
  });
  afterAll(() => t.close());

  const health = (key: string) => t.app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-api-key': key } });

  it('rotating a key answers 200 with the new key, which works; the old one stops at once; the failure is counted', async () => {
    const k = await createKey(org, { name: 'rotate-me' });
    expect((await health(k.key)).statusCode).toBe(200); // now cached on this instance
    const failedBefore = t.container.afterCommit.counts.failed;

    const res = await org.req({ method: 'POST', url: `/api/v1/api-keys/${k.id}/rotate` });
    expect(res.statusCode, res.body).toBe(200);
    const rotated = res.json().data;
    expect(rotated.key).toMatch(/^svc_prod_/);
    expect(rotated.key).not.toBe(k.key);
    expect((await health(rotated.key)).statusCode).toBe(200);
    expect((await health(k.key)).statusCode).toBe(401);
    expect(t.container.afterCommit.counts.failed).toBe(failedBefore + 1);
  });

  it('revoking a key, changing security settings and changing a team answer as usual', async () => {
    const failedBefore = t.container.afterCommit.counts.failed;
    const k = await createKey(org, { name: 'revoke-me' });
    expect((await health(k.key)).statusCode).toBe(200);
    expect((await org.req({ method: 'PATCH', url: `/api/v1/api-keys/${k.id}`, payload: { isActive: false } })).statusCode).toBe(200);
    expect((await health(k.key)).statusCode).toBe(401);
    expect((await org.req({ method: 'DELETE', url: `/api/v1/api-keys/${k.id}` })).statusCode).toBe(204);
    const sec = await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { allowed_environments: ['production'] } });
    expect(sec.statusCode, sec.body).toBe(200);
    const team = await org.req({ method: 'POST', url: '/api/v1/teams', payload: { name: `t-${randomUUID()}` } });
    expect(team.statusCode, team.body).toBe(201);
    expect(t.container.afterCommit.counts.failed).toBe(failedBefore + 4);
  });
});

describe.skipIf(!process.env.REDIS_URL)('on a pub/sub reconnect', () => {
  let t: TestApp;
  let org: TestOrg;
  let admin: Redis;
  // A prefix of its own: its subscriber connection is named `${prefix}sub`, so only it is cut.
  const prefix = `agovtest:${randomUUID()}:`;
  beforeAll(async () => {
    t = await createTestApp({}, { state: await redisState(process.env.REDIS_URL!, prefix) });
    org = await createOrg(t);
    admin = new Redis(process.env.REDIS_URL!);
  });
  afterAll(async () => {
    admin.disconnect();
    await t.close();
  });

  it('drops the local key cache (invalidations published while away are lost)', async () => {
    const k = await createKey(org, { name: 'cached' });
    const health = () => t.app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-api-key': k.key } });
    expect((await health()).statusCode).toBe(200);
    // A change whose invalidation never arrives: written behind the app's back.
    await t.database.db.update(apiKeys).set({ isActive: false }).where(eq(apiKeys.id, k.id));
    expect((await health()).statusCode).toBe(200); // still served from the cache (TTL 30 s)

    const clients = (await admin.client('LIST')) as string;
    const line = clients.split('\n').find((l) => l.includes(` name=${prefix}sub `));
    expect(line).toBeDefined();
    await admin.client('KILL', 'ID', /\bid=(\d+)/.exec(line!)![1]);

    // Reconnection is asynchronous: poll briefly, far below the cache's 30 s TTL.
    let status = 200;
    for (let i = 0; i < 100 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      status = (await health()).statusCode;
    }
    expect(status).toBe(401);
  });
});
