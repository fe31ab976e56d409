/**
 * The data model of docs/decisions.md "Data model: keys by organization": tenant keys, UUIDv7 ids,
 * exact money, trace retention and the bounded search vector; and the unique-violation log.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { DrizzleQueryError, eq } from 'drizzle-orm';
import Fastify from 'fastify';
import { apiKeys, traces } from '../src/db/schema/index.js';
import { hashKey } from '../src/domains/api-keys/key-material.js';
import { retentionCutoff } from '../src/db/retention.js';
import { deleteExpiredTraces } from '../src/domains/traces/retention.js';
import { registerErrorHandling } from '../src/http/errors.js';
import { describe, expect, it } from './fixture.js';
import { createOrg, signJwt, type TestOrg } from './helpers.js';

async function agent(o: TestOrg) {
  const res = await o.req({
    method: 'POST', url: '/api/v1/agents',
    payload: { agentId: `bot-${randomUUID()}`, name: 'bot', type: 'autonomous', platform: 'custom', environment: 'staging' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; agentId: string };
}

const ingest = async (o: TestOrg, items: unknown[]) => {
  const res = await o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: items } });
  expect(res.statusCode, res.body).toBe(202);
  expect(res.json().failed, res.body).toBe(0);
};
const traceIdsOf = async (o: TestOrg, query: string) =>
  ((await o.req({ method: 'GET', url: `/api/v1/traces?limit=100&${query}` })).json().data as { traceId: string }[]).map((x) => x.traceId).sort();

describe('keys by organization', () => {
  it('the same JWT subject signs into two organizations: both 200, one user row in each', async ({ app, org }) => {
    const other = await createOrg(app, 'Other');
    const sub = randomUUID();
    for (const o of [org, other]) {
      const token = await signJwt({ sub, org_id: o.orgId, role: 'admin', email: 'ada@example.com' });
      const res = await app.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode, res.body).toBe(200);
      // The user is a member-able user of each organization, under the same id.
      const team = (await o.req({ method: 'POST', url: '/api/v1/teams', payload: { name: `t-${randomUUID()}` } })).json().data;
      const add = await o.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: sub } });
      expect(add.statusCode, add.body).toBe(201);
      const members = (await o.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data.members;
      expect(members).toEqual([expect.objectContaining({ id: sub, email: 'ada@example.com' })]);
    }
  });

  it('new ids are UUIDv7, in creation order', async ({ org }) => {
    const a = await agent(org);
    const b = await agent(org);
    for (const id of [a.id, b.id, org.orgId]) expect(id[14], id).toBe('7');
    expect(a.id < b.id).toBe(true);
  });

  it("a key cannot be scoped to another organization's agent (the foreign key includes the organization)", async ({ app, org }) => {
    const other = await createOrg(app, 'Foreign');
    const theirs = await agent(other);
    const insert = app.database.db.insert(apiKeys).values({
      organizationId: org.orgId, agentId: theirs.id, name: 'x', keyPrefix: 'svc_prod_x', keyHash: hashKey(randomUUID()),
      environment: 'production', scopes: ['trace:write'], createdBy: 'test',
    });
    await expect(insert).rejects.toMatchObject({ cause: expect.objectContaining({ code: '23503' }) });
  });
});

describe('money is exact', () => {
  it('1,000 costs of 0.000001 USD add up to exactly 0.001 everywhere', async ({ org }) => {
    const a = await agent(org);
    for (let batch = 0; batch < 10; batch++) {
      await ingest(org, Array.from({ length: 100 }, (_, i) => ({ traceId: `m-${batch}-${i}-${randomUUID()}`, agentUuid: a.id, costUsd: 0.000001 })));
    }
    const got = (await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}` })).json().data;
    expect(got.currentMonthCostUsd).toBe(0.001);
    const stats = (await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}/stats` })).json().data;
    expect(stats.last24h.totalCostUsd).toBe(0.001);
    const put = await org.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 0.3 } });
    expect(put.json().data).toMatchObject({ monthlyBudgetUsd: 0.3, currentMonthSpend: 0.001 });
  });

  it('re-sent costs move spend by the exact difference (0.1 + 0.2, then 0.2 → 0.7)', async ({ org }) => {
    const a = await agent(org);
    const [x, y] = [`x-${randomUUID()}`, `y-${randomUUID()}`];
    await ingest(org, [{ traceId: x, agentUuid: a.id, costUsd: 0.1 }, { traceId: y, agentUuid: a.id, costUsd: 0.2 }]);
    expect((await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}` })).json().data.currentMonthCostUsd).toBe(0.3);
    await ingest(org, [{ traceId: y, agentUuid: a.id, costUsd: 0.7 }]);
    expect((await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}` })).json().data.currentMonthCostUsd).toBe(0.8);
  });
});

describe('trace retention', () => {
  it('deletes traces before the cutoff in bounded batches, organization by organization, and stops at the cap', async ({ app }) => {
    const o1 = await createOrg(app, 'Ret1');
    const o2 = await createOrg(app, 'Ret2');
    const [a1, a2] = [await agent(o1), await agent(o2)];
    // January 2000 (the oldest timestamp accepted): no other test writes traces that old, so a test
    // file running in parallel on a shared PostgreSQL loses nothing.
    const at = (day: number) => new Date(Date.UTC(2000, 0, day)).toISOString();
    await ingest(o1, [1, 2, 3, 4, 5, 20].map((d) => ({ traceId: `r1-${d}`, agentUuid: a1.id, timestamp: at(d) })));
    await ingest(o2, [1, 2, 20].map((d) => ({ traceId: `r2-${d}`, agentUuid: a2.id, timestamp: at(d) })));
    const before = new Date(at(10));
    // One statement of at most 2 rows, then the cap: more may remain.
    const capped = await deleteExpiredTraces(app.database.db, { before, batchSize: 2, maxBatches: 1 });
    expect(capped.more).toBe(true);
    expect(capped.deleted).toBeLessThanOrEqual(2);
    const rest = await deleteExpiredTraces(app.database.db, { before, batchSize: 2 });
    expect(rest.more).toBe(false);
    expect(capped.deleted + rest.deleted).toBe(7);
    expect(await traceIdsOf(o1, '')).toEqual(['r1-20']);
    expect(await traceIdsOf(o2, '')).toEqual(['r2-20']);
    expect(await deleteExpiredTraces(app.database.db, { before })).toEqual({ deleted: 0, more: false });
  });

  it('TRACE_RETENTION_DAYS = 0 keeps traces forever; otherwise the cutoff is that many days back', () => {
    const now = new Date('2025-03-31T12:00:00Z');
    expect(retentionCutoff(0, now)).toBeNull();
    expect(retentionCutoff(30, now)).toEqual(new Date('2025-03-01T12:00:00Z'));
  });
});

describe('search vector', () => {
  it('indexes the first 50,000 characters of input text, not what follows', async ({ app, org }) => {
    const a = await agent(org);
    const filler = 'lorem '.repeat(10_000); // 60,000 characters
    await ingest(org, [{ traceId: 'bounded', agentUuid: a.id, input: { prompt: `nearword ${filler} farword` } }]);
    expect(await traceIdsOf(org, 'search=nearword')).toEqual(['bounded']);
    expect(await traceIdsOf(org, 'search=farword')).toEqual([]);
    const [row] = await app.database.db.select({ id: traces.id }).from(traces).where(eq(traces.traceId, 'bounded'));
    expect(row).toBeDefined();
  });
});

describe('unique-violation safety net', () => {
  it('logs SQLSTATE and constraint, never the query or its parameters', async () => {
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
    const app = Fastify({ logger: { level: 'warn', stream } });
    registerErrorHandling(app);
    app.get('/x', async () => {
      const driverError = Object.assign(new Error('duplicate key value violates unique constraint "users_pkey"'), {
        code: '23505', constraint: 'users_pkey', table: 'users', detail: 'Key (id)=(secret-param) already exists.',
      });
      throw new DrizzleQueryError('insert into users values ($1)', ['secret-param'], driverError);
    });
    expect((await app.inject({ method: 'GET', url: '/x' })).statusCode).toBe(409);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.sqlState);
    expect(logged).toMatchObject({ level: 40, sqlState: '23505', constraint: 'users_pkey', table: 'users' });
    expect(lines.join('')).not.toMatch(/secret-param|insert into/);
  });
});
