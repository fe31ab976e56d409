import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, createOrg, signJwt, type TestApp, type TestOrg } from './helpers.js';

let other: TestOrg;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Filter {
  id: string;
  userId: string;
  name: string;
  resourceType: string;
  filterConfig: Record<string, unknown>;
  isDefault: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A signed-in dashboard user: `call` sends requests with the user's JWT. */
async function user(app: TestApp, o: TestOrg, role = 'developer') {
  const id = randomUUID();
  const token = await signJwt({ sub: id, org_id: o.orgId, role, email: `${id}@example.com`, name: 'U' });
  const call = (opts: InjectOptions) => app.app.inject({ ...opts, headers: { authorization: `Bearer ${token}` } });
  return { id, call };
}
type User = Awaited<ReturnType<typeof user>>;

let alice: User;
let bob: User;

beforeAll(async ({ app, org }) => {
  other = await createOrg(app, 'Other');
  alice = await user(app, org);
  bob = await user(app, org);
});

async function create(u: User, body: Record<string, unknown>) {
  const res = await u.call({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: 'f', resource_type: 'agents', ...body } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as Filter;
}

async function list(u: User, qs = '') {
  const res = await u.call({ method: 'GET', url: `/api/v1/saved-filters${qs ? `?${qs}` : ''}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { data: Filter[]; meta: { total: number; limit: number; offset: number } };
}

async function auditActions(org: TestOrg, id: string) {
  const res = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=saved_filter&resourceId=${id}` });
  expect(res.statusCode).toBe(200);
  return (res.json().data as { action: string; userId: string }[]).map((e) => e.action);
}

describe('saved filters CRUD', () => {
  it('creates a filter with defaults and camelCase output, and reads it back', async ({ org }) => {
    const res = await alice.call({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: 'Prod agents', resource_type: 'agents' } });
    expect(res.statusCode).toBe(201);
    const f = res.json().data;
    expect(f).toEqual({
      id: expect.any(String),
      organizationId: org.orgId,
      userId: alice.id,
      name: 'Prod agents',
      resourceType: 'agents',
      filterConfig: {},
      isDefault: false,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const got = await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ data: f });
  });

  it('keeps filter_config as given', async () => {
    const config = { status: ['active', 'paused'], environment: 'production', nested: { a: [1, 2, { b: null }] }, search: 'x' };
    const f = await create(alice, { name: 'Config', resource_type: 'traces', filter_config: config });
    expect(f.filterConfig).toEqual(config);
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` })).json().data.filterConfig).toEqual(config);
  });

  it('updates only the given fields with PUT', async () => {
    const f = await create(alice, { name: 'Before', resource_type: 'incidents', filter_config: { severity: 'high' } });
    const res = await alice.call({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload: { name: 'After' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: f.id, name: 'After', resourceType: 'incidents', filterConfig: { severity: 'high' }, isDefault: false });
    const replaced = await alice.call({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload: { filter_config: { status: 'open' } } });
    expect(replaced.json().data).toMatchObject({ name: 'After', filterConfig: { status: 'open' } });
    expect(Date.parse(replaced.json().data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(f.updatedAt));
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` })).json().data).toMatchObject({ name: 'After', filterConfig: { status: 'open' } });
  });

  it('deletes permanently with 204 and no body', async () => {
    const f = await create(alice, { name: 'Doomed' });
    const res = await alice.call({ method: 'DELETE', url: `/api/v1/saved-filters/${f.id}` });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` })).statusCode).toBe(404);
    expect((await alice.call({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload: { name: 'x' } })).statusCode).toBe(404);
    expect((await alice.call({ method: 'DELETE', url: `/api/v1/saved-filters/${f.id}` })).statusCode).toBe(404);
    expect((await list(alice)).data.map((x) => x.id)).not.toContain(f.id);
  });

  it('answers 404 NOT_FOUND for unknown and malformed ids', async () => {
    for (const id of [randomUUID(), 'nope', '123']) {
      for (const opts of [
        { method: 'GET' },
        { method: 'PUT', payload: { name: 'x' } },
        { method: 'DELETE' },
      ] as const) {
        const res = await alice.call({ ...opts, url: `/api/v1/saved-filters/${id}` });
        expect(res.statusCode, `${opts.method} ${id}`).toBe(404);
        expect(res.json().error.code).toBe('NOT_FOUND');
      }
    }
  });

  it('writes an audit entry for create, update and delete', async ({ org }) => {
    const f = await create(alice, { name: 'Audited' });
    await alice.call({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload: { is_default: true } });
    await alice.call({ method: 'DELETE', url: `/api/v1/saved-filters/${f.id}` });
    expect(await auditActions(org, f.id)).toEqual(['saved_filter.delete', 'saved_filter.update', 'saved_filter.create']);
    const entries = (await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=saved_filter&resourceId=${f.id}` })).json().data;
    for (const e of entries) expect(e.userId).toBe(alice.id);
  });
});

describe('validation (snake_case field names)', () => {
  it('answers 422 VALIDATION_ERROR naming the input field', async () => {
    for (const [payload, field] of [
      [{ resource_type: 'agents' }, 'name'],
      [{ name: '', resource_type: 'agents' }, 'name'],
      [{ name: 'x'.repeat(101), resource_type: 'agents' }, 'name'],
      [{ name: 'a\u0000', resource_type: 'agents' }, 'name'],
      [{ name: 'f' }, 'resource_type'],
      [{ name: 'f', resource_type: 'widgets' }, 'resource_type'],
      [{ name: 'f', resource_type: 'agents', filter_config: [] }, 'filter_config'],
      [{ name: 'f', resource_type: 'agents', filter_config: 'status=open' }, 'filter_config'],
      [{ name: 'f', resource_type: 'agents', filter_config: { k: 'a\u0000' } }, 'filter_config'],
      [{ name: 'f', resource_type: 'agents', is_default: 'yes' }, 'is_default'],
    ] as const) {
      const res = await alice.call({ method: 'POST', url: '/api/v1/saved-filters', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      expect(res.json().error.fields, JSON.stringify(payload)).toHaveProperty(field);
    }
    // The limits are inclusive.
    await create(alice, { name: 'n'.repeat(100) });
  });

  it('refuses a deeply nested filter_config (422, not 500)', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) deep = { d: deep };
    const res = await alice.call({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: 'deep', resource_type: 'agents', filter_config: deep } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toHaveProperty('filter_config');
  });

  it('validates PUT and the list query too', async () => {
    const f = await create(alice, { name: 'Valid' });
    for (const [payload, field] of [
      [{ name: '' }, 'name'],
      [{ filter_config: 5 }, 'filter_config'],
      [{ is_default: 1 }, 'is_default'],
    ] as const) {
      const res = await alice.call({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error.fields).toHaveProperty(field);
    }
    const q = await alice.call({ method: 'GET', url: '/api/v1/saved-filters?resource_type=widgets' });
    expect(q.statusCode).toBe(422);
    expect(q.json().error.fields).toHaveProperty('resource_type');
    expect((await alice.call({ method: 'GET', url: '/api/v1/saved-filters?limit=101' })).statusCode).toBe(422);
  });
});

describe('listing', () => {
  it('filters by resource_type and pages with total, limit and offset', async ({ app, org }) => {
    const carol = await user(app, org);
    await create(carol, { name: 'a1', resource_type: 'agents' });
    await create(carol, { name: 'a2', resource_type: 'agents' });
    await create(carol, { name: 'p1', resource_type: 'policies' });
    await create(carol, { name: 'e1', resource_type: 'executions' });

    const all = await list(carol);
    expect(all.meta).toEqual({ total: 4, limit: 50, offset: 0 });
    // Newest first.
    expect(all.data.map((f) => f.name)).toEqual(['e1', 'p1', 'a2', 'a1']);

    const agents = await list(carol, 'resource_type=agents');
    expect(agents.meta.total).toBe(2);
    expect(agents.data.map((f) => f.resourceType)).toEqual(['agents', 'agents']);
    expect((await list(carol, 'resource_type=incidents')).meta.total).toBe(0);

    const p = await list(carol, 'limit=1&offset=1');
    expect(p).toEqual({ data: [all.data[1]], meta: { total: 4, limit: 1, offset: 1 } });
  });
});

describe('ownership', () => {
  it("never shows or changes another user's filters (404)", async () => {
    const mine = await create(alice, { name: 'Alice only', resource_type: 'policies', is_default: true });
    for (const opts of [
      { method: 'GET' },
      { method: 'PUT', payload: { name: 'hijacked', is_default: true } },
      { method: 'DELETE' },
    ] as const) {
      const res = await bob.call({ ...opts, url: `/api/v1/saved-filters/${mine.id}` });
      expect(res.statusCode, opts.method).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    expect((await list(bob)).data.map((f) => f.id)).not.toContain(mine.id);
    for (const f of (await list(bob)).data) expect(f.userId).toBe(bob.id);

    // Bob's default of the same resource type does not unset Alice's.
    await create(bob, { name: 'Bob default', resource_type: 'policies', is_default: true });
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${mine.id}` })).json().data).toMatchObject({ name: 'Alice only', isDefault: true });
  });

  it('gives API keys their own filters, owned by the key id', async ({ org }) => {
    const f = await org.req({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: 'Key filter', resource_type: 'traces' } });
    expect(f.statusCode).toBe(201);
    const keyFilter = f.json().data as Filter;
    const dev = await createKey(org, { scopes: ['trace:read', 'trace:write'] });
    const seen = (await org.req({ method: 'GET', url: '/api/v1/saved-filters', key: dev.key })).json();
    expect(seen.data.map((x: Filter) => x.id)).not.toContain(keyFilter.id);
    expect((await org.req({ method: 'GET', url: `/api/v1/saved-filters/${keyFilter.id}`, key: dev.key })).statusCode).toBe(404);
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${keyFilter.id}` })).statusCode).toBe(404);

    const own = await org.req({ method: 'POST', url: '/api/v1/saved-filters', key: dev.key, payload: { name: 'Dev key filter', resource_type: 'traces' } });
    expect(own.statusCode).toBe(201);
    expect(own.json().data.userId).toBe(dev.id);
  });

  it('lets a read-only principal list but not change filters (403)', async ({ org }) => {
    const viewer = await createKey(org, { scopes: ['agent:read'] });
    expect((await org.req({ method: 'GET', url: '/api/v1/saved-filters', key: viewer.key })).statusCode).toBe(200);
    const res = await org.req({ method: 'POST', url: '/api/v1/saved-filters', key: viewer.key, payload: { name: 'v', resource_type: 'agents' } });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
  });

  it("answers 404 to another organization and never lists this organization's filters", async ({ app }) => {
    const f = await create(alice, { name: 'Org private' });
    const outsider = await user(app, other);
    for (const caller of [(o: InjectOptions) => other.req(o), outsider.call]) {
      expect((await caller({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` })).statusCode).toBe(404);
      expect((await caller({ method: 'PUT', url: `/api/v1/saved-filters/${f.id}`, payload: { name: 'x' } })).statusCode).toBe(404);
      expect((await caller({ method: 'DELETE', url: `/api/v1/saved-filters/${f.id}` })).statusCode).toBe(404);
      const listed = (await caller({ method: 'GET', url: '/api/v1/saved-filters?limit=100' })).json().data as Filter[];
      expect(listed.map((x) => x.id)).not.toContain(f.id);
    }
    expect((await alice.call({ method: 'GET', url: `/api/v1/saved-filters/${f.id}` })).json().data.name).toBe('Org private');
  });
});

describe('is_default', () => {
  const defaults = async (u: User, type: string) => (await list(u, `resource_type=${type}&limit=100`)).data.filter((f) => f.isDefault).map((f) => f.id);

  it('keeps exactly one default per resource type when creating and updating', async ({ app, org }) => {
    const dave = await user(app, org);
    const a = await create(dave, { name: 'A', resource_type: 'agents', is_default: true });
    expect(a.isDefault).toBe(true);
    const b = await create(dave, { name: 'B', resource_type: 'agents', is_default: true });
    expect(await defaults(dave, 'agents')).toEqual([b.id]);
    expect((await dave.call({ method: 'GET', url: `/api/v1/saved-filters/${a.id}` })).json().data.isDefault).toBe(false);

    // Another resource type has its own default.
    const tr = await create(dave, { name: 'T', resource_type: 'traces', is_default: true });
    expect(await defaults(dave, 'traces')).toEqual([tr.id]);
    expect(await defaults(dave, 'agents')).toEqual([b.id]);

    // Switching back with PUT.
    const res = await dave.call({ method: 'PUT', url: `/api/v1/saved-filters/${a.id}`, payload: { is_default: true } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.isDefault).toBe(true);
    expect(await defaults(dave, 'agents')).toEqual([a.id]);
    expect(await defaults(dave, 'traces')).toEqual([tr.id]);

    // Setting the current default again keeps it; unsetting leaves none.
    expect((await dave.call({ method: 'PUT', url: `/api/v1/saved-filters/${a.id}`, payload: { is_default: true } })).json().data.isDefault).toBe(true);
    expect(await defaults(dave, 'agents')).toEqual([a.id]);
    expect((await dave.call({ method: 'PUT', url: `/api/v1/saved-filters/${a.id}`, payload: { is_default: false } })).json().data.isDefault).toBe(false);
    expect(await defaults(dave, 'agents')).toEqual([]);

    // A non-default creation leaves the current default alone.
    await create(dave, { name: 'C', resource_type: 'traces' });
    expect(await defaults(dave, 'traces')).toEqual([tr.id]);
  });

  it('survives concurrent default switches: all succeed, one default remains', async ({ app, org }) => {
    const erin = await user(app, org);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        erin.call({ method: 'POST', url: '/api/v1/saved-filters', payload: { name: `c${i}`, resource_type: 'executions', is_default: true } }),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(6).fill(201));
    expect(await defaults(erin, 'executions')).toHaveLength(1);
  });
});
