import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { redisState, type SharedState } from '../src/lib/shared-state.js';
import { createOrg, createTestApp, signJwt, testDatabaseUrl, type TestApp, type TestOrg } from './helpers.js';
import type { FastifyInstance } from 'fastify';

// Two instances of the API on one database: A takes writes, B serves (and caches) GET /teams.
let a: TestApp;
let b: FastifyInstance;
let bState: SharedState | undefined;
let org: TestOrg;
beforeAll(async () => {
  a = await createTestApp();
  // B shares A's database; with Redis it has its own connections (real pub/sub), else A's bus.
  bState = process.env.REDIS_URL ? await redisState(process.env.REDIS_URL) : undefined;
  const config = parseConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_CONTROL_PER_MINUTE: '1000000', DATABASE_URL: process.env.DATABASE_URL ? await testDatabaseUrl() : '' });
  b = await buildApp({ config, database: a.database, state: bState ?? a.state });
  await b.ready();
  org = await createOrg(a);
});
afterAll(async () => {
  await b.close();
  await bState?.close();
  await a.close();
});

const listOnB = async () => (await b.inject({ method: 'GET', url: '/api/v1/teams', headers: { 'x-api-key': org.key } })).json();
/** Pub/sub delivery is asynchronous: poll briefly (well under the 5 s TTL). */
async function eventually(check: () => Promise<boolean>) {
  for (let i = 0; i < 50; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe('GET /teams cache', () => {
  it('a change on another instance is visible at once, not after the cache expires', async () => {
    expect((await listOnB()).meta.total).toBe(0); // B caches the empty page
    const created = await org.req({ method: 'POST', url: '/api/v1/teams', payload: { name: 'Platform' } });
    expect(created.statusCode).toBe(201);
    expect(await eventually(async () => (await listOnB()).meta.total === 1)).toBe(true);

    const teamId = created.json().data.id;
    const sub = randomUUID();
    await a.app.inject({ method: 'GET', url: '/api/v1/health', headers: { authorization: `Bearer ${await signJwt({ sub, org_id: org.orgId, role: 'viewer' })}` } });
    expect((await org.req({ method: 'POST', url: `/api/v1/teams/${teamId}/members`, payload: { userId: sub } })).statusCode).toBe(201);
    expect(await eventually(async () => (await listOnB()).data[0].memberCount === 1)).toBe(true);
  });

  it('the instance that made a change reads it back immediately', async () => {
    const o = await createOrg(a);
    const list = async () => (await o.req({ method: 'GET', url: '/api/v1/teams' })).json();
    expect((await list()).meta.total).toBe(0);
    await o.req({ method: 'POST', url: '/api/v1/teams', payload: { name: 'Ops' } });
    expect((await list()).data.map((t: { name: string }) => t.name)).toEqual(['Ops']);
    const id = (await list()).data[0].id;
    await o.req({ method: 'PATCH', url: `/api/v1/teams/${id}`, payload: { name: 'SRE' } });
    expect((await list()).data.map((t: { name: string }) => t.name)).toEqual(['SRE']);
    await o.req({ method: 'DELETE', url: `/api/v1/teams/${id}` });
    expect((await list()).meta.total).toBe(0);
  });

  it('serves the same body from the cache as from the database', async () => {
    const o = await createOrg(a);
    await o.req({ method: 'POST', url: '/api/v1/teams', payload: { name: 'Data', description: 'warehouse' } });
    const first = await o.req({ method: 'GET', url: '/api/v1/teams?search=ware' });
    const second = await o.req({ method: 'GET', url: '/api/v1/teams?search=ware' });
    expect(second.headers['content-type']).toMatch(/application\/json/);
    expect(second.body).toBe(first.body);
    expect(first.json().data[0]).toMatchObject({ name: 'Data', memberCount: 0 });
  });
});
