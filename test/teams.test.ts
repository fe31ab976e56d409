import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, createOrg, signJwt, type TestApp, type TestOrg } from './helpers.js';

let other: TestOrg;
let viewerKey: string;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async ({ app, org }) => {
  other = await createOrg(app, 'Other');
  viewerKey = (await createKey(org, { scopes: ['agent:read'] })).key;
});

/** Signs a user in once (which creates the user row, id = sub) and answers the user's id. */
async function signIn(app: TestApp, o: TestOrg, claims: { role?: string; email?: string; name?: string } = {}) {
  const sub = randomUUID();
  const token = await signJwt({ sub, org_id: o.orgId, role: claims.role ?? 'viewer', email: claims.email ?? `${sub}@example.com`, name: claims.name ?? 'Some One' });
  const res = await app.app.inject({ method: 'GET', url: '/api/v1/teams', headers: { authorization: `Bearer ${token}` } });
  expect(res.statusCode).toBe(200);
  return { id: sub, token };
}

async function createTeam(o: TestOrg, body: Record<string, unknown>) {
  const res = await o.req({ method: 'POST', url: '/api/v1/teams', payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; name: string; description: string | null; memberCount: number };
}

async function auditActions(o: TestOrg, teamId: string) {
  const res = await o.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=team&resourceId=${teamId}&limit=100` });
  expect(res.statusCode).toBe(200);
  return (res.json().data as { action: string }[]).map((e) => e.action);
}

const uniq = (s: string) => `${s} ${Math.random().toString(36).slice(2, 8)}`;

describe('POST /teams and GET /teams/{id}', () => {
  it('creates a team and reads it back with an empty member list', async ({ org }) => {
    const res = await org.req({ method: 'POST', url: '/api/v1/teams', payload: { name: 'Platform', description: 'Runs the platform' } });
    expect(res.statusCode).toBe(201);
    const team = res.json().data;
    expect(team).toEqual({
      id: expect.any(String),
      organizationId: org.orgId,
      name: 'Platform',
      description: 'Runs the platform',
      memberCount: 0,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });

    const got = await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ data: { ...team, members: [] } });
    expect(await auditActions(org, team.id)).toEqual(['team.create']);
  });

  it('defaults description to null', async ({ org }) => {
    const team = await createTeam(org, { name: uniq('No description') });
    expect(team.description).toBeNull();
  });

  it('refuses a second live team with the same name (409), but not in another organization', async ({ org }) => {
    const name = uniq('Dup');
    await createTeam(org, { name });
    const res = await org.req({ method: 'POST', url: '/api/v1/teams', payload: { name } });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('CONFLICT');
    await createTeam(other, { name });
  });

  it('validates the input (422 with fields)', async ({ org }) => {
    for (const [payload, field] of [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{ name: 'ok', description: 'x'.repeat(501) }, 'description'],
      [{ name: 'a\u0000b' }, 'name'],
      [{ name: 42 }, 'name'],
    ] as const) {
      const res = await org.req({ method: 'POST', url: '/api/v1/teams', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      expect(res.json().error.fields).toHaveProperty(field);
    }
    // The limits are inclusive.
    await createTeam(org, { name: 'n'.repeat(100), description: 'd'.repeat(500) });
  });

  it('answers 404 for unknown and malformed ids', async ({ org }) => {
    for (const id of [randomUUID(), 'not-a-uuid', '1']) {
      const res = await org.req({ method: 'GET', url: `/api/v1/teams/${id}` });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
  });

  it('requires credentials (401)', async ({ app }) => {
    const res = await app.app.inject({ method: 'GET', url: '/api/v1/teams' });
    expect(res.statusCode).toBe(401);
  });
});

describe('GET /teams', () => {
  let fresh: TestOrg;
  beforeAll(async ({ app }) => {
    fresh = await createOrg(app, 'Listing');
    for (const [name, description] of [
      ['Charlie', 'Handles billing'],
      ['Alpha', null],
      ['Bravo', 'Owns the 100% uptime_target'],
      ['Delta', 'search ops'],
      ['Echo_team', null],
    ]) await createTeam(fresh, { name, ...(description ? { description } : {}) });
  });

  it('lists live teams ordered by name with total, limit and offset', async () => {
    const res = await fresh.req({ method: 'GET', url: '/api/v1/teams' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.meta).toEqual({ total: 5, limit: 50, offset: 0 });
    expect(body.data).toHaveLength(5);
    expect(body.data.map((x: { name: string }) => x.name)).toEqual(['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo_team']);
    for (const item of body.data) expect(Object.keys(item).sort()).toEqual(['createdAt', 'description', 'id', 'memberCount', 'name', 'organizationId', 'updatedAt']);
  });

  it('pages with limit and offset, keeping the total', async () => {
    const all = (await fresh.req({ method: 'GET', url: '/api/v1/teams' })).json().data.map((x: { id: string }) => x.id);
    const p1 = (await fresh.req({ method: 'GET', url: '/api/v1/teams?limit=2&offset=0' })).json();
    const p2 = (await fresh.req({ method: 'GET', url: '/api/v1/teams?limit=2&offset=2' })).json();
    const p3 = (await fresh.req({ method: 'GET', url: '/api/v1/teams?limit=2&offset=4' })).json();
    expect(p1.meta).toEqual({ total: 5, limit: 2, offset: 0 });
    expect(p3.meta).toEqual({ total: 5, limit: 2, offset: 4 });
    expect([...p1.data, ...p2.data, ...p3.data].map((x: { id: string }) => x.id)).toEqual(all);
    const past = (await fresh.req({ method: 'GET', url: '/api/v1/teams?limit=2&offset=50' })).json();
    expect(past).toEqual({ data: [], meta: { total: 5, limit: 2, offset: 50 } });
  });

  it('searches name and description case-insensitively, treating % and _ literally', async () => {
    const names = async (q: string) =>
      (await fresh.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(q)}` })).json().data.map((x: { name: string }) => x.name).sort();
    expect(await names('aLPHA')).toEqual(['Alpha']);
    expect(await names('billing')).toEqual(['Charlie']);
    expect(await names('SEARCH')).toEqual(['Delta']);
    expect(await names('%')).toEqual(['Bravo']);
    expect(await names('_')).toEqual(['Bravo', 'Echo_team']);
    expect(await names('zzz')).toEqual([]);
    const res = await fresh.req({ method: 'GET', url: '/api/v1/teams?search=ha' });
    expect(res.json().meta.total).toBe(2); // Alpha, Charlie
  });

  it('validates limit and offset', async () => {
    for (const qs of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const res = await fresh.req({ method: 'GET', url: `/api/v1/teams?${qs}` });
      expect(res.statusCode, qs).toBe(422);
    }
    expect((await fresh.req({ method: 'GET', url: '/api/v1/teams?limit=100' })).statusCode).toBe(200);
  });
});

describe('PATCH /teams/{id}', () => {
  it('changes only the given fields and moves updatedAt', async ({ org }) => {
    const team = await createTeam(org, { name: uniq('Patch me'), description: 'old' });
    const renamed = uniq('Renamed');
    const res = await org.req({ method: 'PATCH', url: `/api/v1/teams/${team.id}`, payload: { name: renamed } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: team.id, name: renamed, description: 'old', memberCount: 0 });

    const cleared = await org.req({ method: 'PATCH', url: `/api/v1/teams/${team.id}`, payload: { description: null } });
    expect(cleared.json().data).toMatchObject({ name: renamed, description: null });
    expect(Date.parse(cleared.json().data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(cleared.json().data.createdAt));

    expect((await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data).toMatchObject({ name: renamed, description: null });
    expect(await auditActions(org, team.id)).toEqual(['team.update', 'team.update', 'team.create']);
  });

  it('keeps its own name without a conflict, refuses another team\u2019s name (409)', async ({ org }) => {
    const a = await createTeam(org, { name: uniq('A') });
    const b = await createTeam(org, { name: uniq('B') });
    expect((await org.req({ method: 'PATCH', url: `/api/v1/teams/${a.id}`, payload: { name: a.name } })).statusCode).toBe(200);
    const res = await org.req({ method: 'PATCH', url: `/api/v1/teams/${a.id}`, payload: { name: b.name } });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('CONFLICT');
  });

  it('answers 404 for an unknown team and 422 for bad input', async ({ org }) => {
    expect((await org.req({ method: 'PATCH', url: `/api/v1/teams/${randomUUID()}`, payload: { name: 'x' } })).statusCode).toBe(404);
    const team = await createTeam(org, { name: uniq('Validate') });
    const res = await org.req({ method: 'PATCH', url: `/api/v1/teams/${team.id}`, payload: { name: '' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toHaveProperty('name');
  });
});

describe('DELETE /teams/{id}', () => {
  it('soft-deletes: the team is 404 afterwards, gone from lists, and its name is free again', async ({ org }) => {
    const name = uniq('Doomed');
    const team = await createTeam(org, { name });
    const res = await org.req({ method: 'DELETE', url: `/api/v1/teams/${team.id}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: expect.any(String) });

    for (const [method, url] of [
      ['GET', `/api/v1/teams/${team.id}`],
      ['PATCH', `/api/v1/teams/${team.id}`],
      ['DELETE', `/api/v1/teams/${team.id}`],
      ['GET', `/api/v1/teams/${team.id}/members`],
    ] as const) {
      const r = await org.req({ method, url, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) });
      expect(r.statusCode, `${method} ${url}`).toBe(404);
    }
    const list = (await org.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(name)}` })).json();
    expect(list).toMatchObject({ data: [], meta: { total: 0 } });
    expect(await auditActions(org, team.id)).toEqual(['team.delete', 'team.create']);

    const again = await createTeam(org, { name });
    expect(again.id).not.toBe(team.id);
  });
});

describe('team members', () => {
  it('adds, lists and removes members; memberCount follows', async ({ app, org }) => {
    const team = await createTeam(org, { name: uniq('Members') });
    const ann = await signIn(app, org, { email: 'ann@example.com', name: 'Ann' });
    const bob = await signIn(app, org, { email: 'bob@example.com', name: 'Bob' });

    const add = await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: ann.id, role: 'lead' } });
    expect(add.statusCode).toBe(201);
    expect(add.json()).toEqual({ message: expect.any(String) });
    expect((await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: bob.id } })).statusCode).toBe(201);

    const detail = (await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data;
    expect(detail.memberCount).toBe(2);
    expect(detail.members).toEqual([
      { id: ann.id, email: 'ann@example.com', name: 'Ann', role: 'lead', addedAt: expect.stringMatching(ISO) },
      { id: bob.id, email: 'bob@example.com', name: 'Bob', role: 'member', addedAt: expect.stringMatching(ISO) },
    ]);
    const listed = (await org.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(team.name)}` })).json().data;
    expect(listed).toEqual([expect.objectContaining({ id: team.id, memberCount: 2 })]);

    const members = await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}/members` });
    expect(members.statusCode).toBe(200);
    expect(members.json()).toEqual({ data: detail.members, meta: { total: 2, limit: 50, offset: 0 } });
    const second = (await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}/members?limit=1&offset=1` })).json();
    expect(second).toEqual({ data: [detail.members[1]], meta: { total: 2, limit: 1, offset: 1 } });

    const rm = await org.req({ method: 'DELETE', url: `/api/v1/teams/${team.id}/members/${ann.id}` });
    expect(rm.statusCode).toBe(200);
    expect(rm.json()).toEqual({ message: expect.any(String) });
    const after = (await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data;
    expect(after.memberCount).toBe(1);
    expect(after.members.map((m: { id: string }) => m.id)).toEqual([bob.id]);
    expect((await org.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(team.name)}` })).json().data[0].memberCount).toBe(1);

    expect(await auditActions(org, team.id)).toEqual(['team.member_remove', 'team.member_add', 'team.member_add', 'team.create']);
  });

  it('answers 409 for a duplicate membership', async ({ app, org }) => {
    const team = await createTeam(org, { name: uniq('Dup members') });
    const u = await signIn(app, org);
    expect((await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: u.id } })).statusCode).toBe(201);
    const res = await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: u.id, role: 'lead' } });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('CONFLICT');
    expect((await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data.memberCount).toBe(1);
  });

  it('answers 404 for an unknown team, an unknown user, and a user of another organization', async ({ app, org }) => {
    const team = await createTeam(org, { name: uniq('404 members') });
    const u = await signIn(app, org);
    const stranger = await signIn(app, other);
    const unknownTeam = await org.req({ method: 'POST', url: `/api/v1/teams/${randomUUID()}/members`, payload: { userId: u.id } });
    expect(unknownTeam.statusCode).toBe(404);
    expect(unknownTeam.json().error.code).toBe('NOT_FOUND');
    const unknownUser = await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: randomUUID() } });
    expect(unknownUser.statusCode).toBe(404);
    expect(unknownUser.json().error.code).toBe('NOT_FOUND');
    expect((await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: stranger.id } })).statusCode).toBe(404);
    expect((await org.req({ method: 'GET', url: `/api/v1/teams/${randomUUID()}/members` })).statusCode).toBe(404);
  });

  it('answers 422 when userId is missing or not a uuid, or the role is out of bounds', async ({ org }) => {
    const team = await createTeam(org, { name: uniq('422 members') });
    for (const [payload, field] of [
      [{}, 'userId'],
      [{ role: 'lead' }, 'userId'],
      [{ userId: 'nope' }, 'userId'],
      [{ userId: randomUUID(), role: '' }, 'role'],
      [{ userId: randomUUID(), role: 'r'.repeat(51) }, 'role'],
    ] as const) {
      const res = await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      expect(res.json().error.fields).toHaveProperty(field);
    }
  });

  it('answers 404 when removing a non-member, from an unknown team, or with malformed ids', async ({ app, org }) => {
    const team = await createTeam(org, { name: uniq('Remove 404') });
    const u = await signIn(app, org);
    for (const url of [
      `/api/v1/teams/${team.id}/members/${u.id}`,
      `/api/v1/teams/${randomUUID()}/members/${u.id}`,
      `/api/v1/teams/${team.id}/members/not-a-uuid`,
      `/api/v1/teams/not-a-uuid/members/${u.id}`,
    ]) {
      const res = await org.req({ method: 'DELETE', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
  });
});

describe('roles', () => {
  let team: { id: string };
  let member: { id: string };
  beforeAll(async ({ app, org }) => {
    team = await createTeam(org, { name: uniq('Roles') });
    member = await signIn(app, org);
    await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: member.id } });
  });

  const changes = () =>
    [
      { method: 'POST', url: '/api/v1/teams', payload: { name: uniq('Nope') } },
      { method: 'PATCH', url: `/api/v1/teams/${team.id}`, payload: { name: uniq('Nope') } },
      { method: 'DELETE', url: `/api/v1/teams/${team.id}` },
      { method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: member.id } },
      { method: 'DELETE', url: `/api/v1/teams/${team.id}/members/${member.id}` },
    ] as const;

  it('lets a non-admin key read but not change (403 FORBIDDEN)', async ({ org }) => {
    for (const url of ['/api/v1/teams', `/api/v1/teams/${team.id}`, `/api/v1/teams/${team.id}/members`]) {
      expect((await org.req({ method: 'GET', url, key: viewerKey })).statusCode, url).toBe(200);
    }
    for (const c of changes()) {
      const res = await org.req({ ...c, key: viewerKey });
      expect(res.statusCode, `${c.method} ${c.url}`).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
    }
    // Nothing changed.
    expect((await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data.memberCount).toBe(1);
  });

  it('refuses a developer key too: team changes need admin', async ({ org }) => {
    const dev = (await createKey(org, { scopes: ['agent:read', 'agent:write'] })).key;
    for (const c of changes()) expect((await org.req({ ...c, key: dev })).statusCode, `${c.method} ${c.url}`).toBe(403);
  });

  it('gives JWT users their role: developer is refused, admin may change', async ({ app, org }) => {
    const dev = await signIn(app, org, { role: 'developer' });
    const adm = await signIn(app, org, { role: 'admin' });
    const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    const refused = await app.app.inject({ method: 'POST', url: '/api/v1/teams', payload: { name: uniq('Dev') }, ...as(dev.token) });
    expect(refused.statusCode).toBe(403);
    const ok = await app.app.inject({ method: 'POST', url: '/api/v1/teams', payload: { name: uniq('Adm') }, ...as(adm.token) });
    expect(ok.statusCode).toBe(201);
    const entries = (await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=team&resourceId=${ok.json().data.id}` })).json().data;
    expect(entries).toEqual([expect.objectContaining({ action: 'team.create', userId: adm.id })]);
  });
});

describe('organization isolation', () => {
  it("answers 404 for another organization's team and never lists it", async ({ app, org }) => {
    const name = uniq('Private');
    const team = await createTeam(org, { name, description: 'secret' });
    const u = await signIn(app, org);
    await org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: u.id } });
    const outsider = await signIn(app, other);

    for (const c of [
      { method: 'GET', url: `/api/v1/teams/${team.id}` },
      { method: 'GET', url: `/api/v1/teams/${team.id}/members` },
      { method: 'PATCH', url: `/api/v1/teams/${team.id}`, payload: { name: 'stolen' } },
      { method: 'DELETE', url: `/api/v1/teams/${team.id}` },
      { method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: outsider.id } },
      { method: 'DELETE', url: `/api/v1/teams/${team.id}/members/${u.id}` },
    ] as const) {
      const res = await other.req(c);
      expect(res.statusCode, `${c.method} ${c.url}`).toBe(404);
    }
    const ids = (await other.req({ method: 'GET', url: '/api/v1/teams?limit=100' })).json().data.map((x: { id: string }) => x.id);
    expect(ids).not.toContain(team.id);
    expect((await other.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(name)}` })).json().meta.total).toBe(0);

    // Unchanged for its owner.
    const mine = (await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data;
    expect(mine).toMatchObject({ name, description: 'secret', memberCount: 1 });
  });
});

describe('concurrent changes', () => {
  const codes = (rs: { statusCode: number }[]) => rs.map((r) => r.statusCode).sort();

  it('creates one team when several requests race for the same name; the others get 409', async ({ org }) => {
    const name = uniq('Race');
    const rs = await Promise.all(Array.from({ length: 5 }, () => org.req({ method: 'POST', url: '/api/v1/teams', payload: { name } })));
    expect(codes(rs)).toEqual([201, 409, 409, 409, 409]);
    expect((await org.req({ method: 'GET', url: `/api/v1/teams?search=${encodeURIComponent(name)}` })).json().meta.total).toBe(1);
  });

  it('lets one of two racing renames to the same name win; the other gets 409', async ({ org }) => {
    const a = await createTeam(org, { name: uniq('Rename A') });
    const b = await createTeam(org, { name: uniq('Rename B') });
    const name = uniq('Taken');
    const rs = await Promise.all([a, b].map((x) => org.req({ method: 'PATCH', url: `/api/v1/teams/${x.id}`, payload: { name } })));
    expect(codes(rs)).toEqual([200, 409]);
  });

  it('adds a user once when the same membership is requested concurrently', async ({ app, org }) => {
    const team = await createTeam(org, { name: uniq('Race members') });
    const u = await signIn(app, org);
    const rs = await Promise.all(Array.from({ length: 4 }, () => org.req({ method: 'POST', url: `/api/v1/teams/${team.id}/members`, payload: { userId: u.id } })));
    expect(codes(rs)).toEqual([201, 409, 409, 409]);
    expect((await org.req({ method: 'GET', url: `/api/v1/teams/${team.id}` })).json().data.memberCount).toBe(1);
  });
});
