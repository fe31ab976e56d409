import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { findLiveGrant, parametersDigest, requestGrant } from '../src/domains/access-grants/index.js';
import { MAX_GRANTS_MATCHED } from '../src/domains/access-grants/service.js';
import { accessGrants } from '../src/db/schema/index.js';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, createOrg, signJwt, type TestApp, type TestOrg } from './helpers.js';

const BASE = '/api/v1/access-grants';

interface Grant {
  id: string;
  organizationId: string;
  agentId: string;
  action: string;
  resource: string | null;
  parametersDigest: string | null;
  policyId: string | null;
  policyVersion: string | null;
  status: string;
  reason: string | null;
  requestedBy: string;
  requestedAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  expiresAt: string;
  revokedAt: string | null;
}

/** A developer API key of the org: a second principal besides the org's admin key. */
let dev: { id: string; key: string };
let agentId: string;
let adminKeyId: string;

async function newAgent(org: TestOrg) {
  const res = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'A', type: 'chatbot', platform: 'custom', environment: 'production' } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.id as string;
}

beforeAll(async ({ org }) => {
  dev = await createKey(org, { name: 'dev', scopes: ['policy:read', 'policy:write'] });
  agentId = await newAgent(org);
  // The admin key's id, as the API records it (requestedBy of a grant it creates).
  const created = await org.req({ method: 'POST', url: BASE, payload: { agentId, action: 'probe', ttlSeconds: 60, reason: 'probe' } });
  adminKeyId = created.json().data.requestedBy;
});

const call = (org: TestOrg, opts: InjectOptions & { key?: string }) => org.req(opts);

/** A pending grant requested (as the engine does) by the principal `requestedBy`. */
async function pending(t: TestApp, org: TestOrg, over: Partial<Parameters<typeof requestGrant>[2]> = {}) {
  return requestGrant(t.container.db, org.orgId, { agentId, action: `tool.${randomUUID()}`, requestedBy: dev.id, ttlSeconds: 3600, ...over }, t.clock.now());
}

describe('POST /access-grants', () => {
  it('creates an approved grant decided by its creator, audited', async ({ app, org }) => {
    const res = await call(org, { method: 'POST', url: BASE, key: dev.key, payload: { agentId, action: 'send_*', resource: 'mail/**', ttlSeconds: 600, reason: 'support rota' } });
    expect(res.statusCode, res.body).toBe(201);
    const g = res.json().data as Grant;
    expect(g).toMatchObject({ organizationId: org.orgId, agentId, action: 'send_*', resource: 'mail/**', status: 'approved', reason: 'support rota', requestedBy: dev.id, decidedBy: dev.id, parametersDigest: null, policyId: null, revokedAt: null });
    expect(g.decidedAt).toBe(app.clock.now().toISOString());
    expect(Date.parse(g.expiresAt) - app.clock.now().getTime()).toBe(600_000);
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=access_grant&resourceId=${g.id}` });
    expect(audit.json().data.map((e: { action: string }) => e.action)).toEqual(['access_grant.create']);
  });

  it('takes expiresAt instead of ttlSeconds, exactly one of them, in the future', async ({ app, org }) => {
    const at = new Date(app.clock.now().getTime() + 3_600_000).toISOString();
    const ok = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x', expiresAt: at, reason: 'r' } });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json().data.expiresAt).toBe(at);
    const both = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x', expiresAt: at, ttlSeconds: 60, reason: 'r' } });
    expect(both.statusCode).toBe(422);
    expect(both.json().error.fields).toHaveProperty('expiresAt');
    const none = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x', reason: 'r' } });
    expect(none.statusCode).toBe(422);
    const past = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x', expiresAt: new Date(app.clock.now().getTime() - 1000).toISOString(), reason: 'r' } });
    expect(past.statusCode).toBe(422);
    expect(past.json().error.fields.expiresAt).toMatch(/future/);
  });

  it('refuses an unknown agent, a bad glob and a missing reason (422)', async ({ org }) => {
    const unknown = await call(org, { method: 'POST', url: BASE, payload: { agentId: randomUUID(), action: 'x', ttlSeconds: 60, reason: 'r' } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.fields.agentId).toMatch(/no agent/);
    const glob = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x\\', ttlSeconds: 60, reason: 'r' } });
    expect(glob.statusCode).toBe(422);
    expect(glob.json().error.fields).toHaveProperty('action');
    const noReason = await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'x', ttlSeconds: 60 } });
    expect(noReason.statusCode).toBe(422);
  });

  it("refuses another organization's agent as unknown", async ({ app, org }) => {
    const other = await createOrg(app, 'Other');
    const theirs = await newAgent(other);
    const res = await call(org, { method: 'POST', url: BASE, payload: { agentId: theirs, action: 'x', ttlSeconds: 60, reason: 'r' } });
    expect(res.statusCode).toBe(422);
  });
});

describe('approve and deny', () => {
  it('a second principal approves a pending grant; it lasts as long as requested from the approval', async ({ app, org }) => {
    const g = await pending(app, org);
    expect(g.status).toBe('pending');
    app.clock.advance(600_000);
    const res = await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` });
    expect(res.statusCode, res.body).toBe(200);
    const a = res.json().data as Grant;
    expect(a).toMatchObject({ status: 'approved', decidedBy: adminKeyId, decidedAt: app.clock.now().toISOString(), requestedBy: dev.id });
    expect(Date.parse(a.expiresAt) - app.clock.now().getTime()).toBe(3_600_000);
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=access_grant&resourceId=${g.id}` });
    expect(audit.json().data.map((e: { action: string }) => e.action).sort()).toEqual(['access_grant.approve', 'access_grant.request']);
  });

  it('the principal that requested a grant may not approve it (403), but may deny it', async ({ app, org }) => {
    const g = await pending(app, org);
    const self = await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve`, key: dev.key });
    expect(self.statusCode).toBe(403);
    expect(self.json().error.message).toMatch(/you requested this access grant/i);
    expect((await call(org, { method: 'GET', url: `${BASE}/${g.id}` })).json().data.status).toBe('pending');
    const deny = await call(org, { method: 'POST', url: `${BASE}/${g.id}/deny`, key: dev.key });
    expect(deny.statusCode).toBe(200);
    expect(deny.json().data).toMatchObject({ status: 'denied', decidedBy: dev.id });
  });

  it('a JWT user cannot approve its own request either; another user can', async ({ app, org }) => {
    app.clock.set(Date.now()); // tokens are checked against the app's clock, which other tests moved
    const users = await Promise.all([randomUUID(), randomUUID()].map(async (sub) => ({ sub, token: await signJwt({ sub, org_id: org.orgId, role: 'developer' }) })));
    const g = await pending(app, org, { requestedBy: users[0].sub });
    const as = (u: (typeof users)[number]) => app.app.inject({ method: 'POST', url: `${BASE}/${g.id}/approve`, headers: { authorization: `Bearer ${u.token}` } });
    expect((await as(users[0])).statusCode).toBe(403);
    const ok = await as(users[1]);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data.decidedBy).toBe(users[1].sub);
  });

  it('approving needs the developer role: a viewer key is 403', async ({ app, org }) => {
    const viewer = await createKey(org, { name: 'viewer', scopes: ['policy:read'] });
    const g = await pending(app, org);
    const res = await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve`, key: viewer.key });
    expect(res.statusCode).toBe(403);
    expect((await call(org, { method: 'GET', url: `${BASE}/${g.id}`, key: viewer.key })).json().data.status).toBe('pending');
  });

  it('only pending grants move: approve, deny and revoke elsewhere are 409 INVALID_TRANSITION', async ({ app, org }) => {
    const denied = await pending(app, org);
    expect((await call(org, { method: 'POST', url: `${BASE}/${denied.id}/deny` })).statusCode).toBe(200);
    for (const [method, path] of [['POST', 'approve'], ['POST', 'deny'], ['DELETE', '']] as const) {
      const res = await call(org, { method, url: `${BASE}/${denied.id}${path ? `/${path}` : ''}` });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('INVALID_TRANSITION');
    }
    const approved = await pending(app, org);
    expect((await call(org, { method: 'POST', url: `${BASE}/${approved.id}/approve` })).statusCode).toBe(200);
    expect((await call(org, { method: 'POST', url: `${BASE}/${approved.id}/approve` })).statusCode).toBe(409);
    expect((await call(org, { method: 'POST', url: `${BASE}/${approved.id}/deny` })).statusCode).toBe(409);
    const pend = await pending(app, org);
    const revokePending = await call(org, { method: 'DELETE', url: `${BASE}/${pend.id}` });
    expect(revokePending.statusCode).toBe(409);
    expect(revokePending.json().error.message).toMatch(/pending/);
  });
});

describe('revoke (DELETE)', () => {
  it('revokes an approved grant: kept with status revoked, audited, no longer live; twice is 409', async ({ app, org }) => {
    const created = (await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'revoke.me', ttlSeconds: 600, reason: 'r' } })).json().data as Grant;
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId, action: 'revoke.me' }, app.clock.now())).not.toBeNull();
    const res = await call(org, { method: 'DELETE', url: `${BASE}/${created.id}`, key: dev.key });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'revoked', revokedAt: app.clock.now().toISOString() });
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId, action: 'revoke.me' }, app.clock.now())).toBeNull();
    expect((await call(org, { method: 'DELETE', url: `${BASE}/${created.id}` })).statusCode).toBe(409);
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=access_grant&resourceId=${created.id}&action=access_grant.revoke` });
    expect(audit.json().data).toHaveLength(1);
    expect(audit.json().data[0].userId).toBe(dev.id);
  });
});

describe('expiry on the clock', () => {
  it('an approved grant reads as expired past expiresAt, is no longer live, and cannot be revoked', async ({ app, org }) => {
    const g = (await call(org, { method: 'POST', url: BASE, payload: { agentId, action: 'expire.me', ttlSeconds: 60, reason: 'r' } })).json().data as Grant;
    app.clock.advance(59_999);
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId, action: 'expire.me' }, app.clock.now())).not.toBeNull();
    app.clock.advance(1);
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId, action: 'expire.me' }, app.clock.now())).toBeNull();
    expect((await call(org, { method: 'GET', url: `${BASE}/${g.id}` })).json().data.status).toBe('expired');
    const revoke = await call(org, { method: 'DELETE', url: `${BASE}/${g.id}` });
    expect(revoke.statusCode).toBe(409);
    expect(revoke.json().error.message).toMatch(/expired/);
  });

  it('a pending request lapses after its lifetime: not approvable, and a new request makes a new one', async ({ app, org }) => {
    const action = `lapse.${randomUUID()}`;
    const g = await pending(app, org, { action, ttlSeconds: 120 });
    app.clock.advance(120_000);
    const res = await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INVALID_TRANSITION');
    const again = await pending(app, org, { action, ttlSeconds: 120 });
    expect(again.id).not.toBe(g.id);
    expect(again.status).toBe('pending');
    expect((await call(org, { method: 'GET', url: `${BASE}/${g.id}` })).json().data.status).toBe('expired');
  });
});

describe('GET /access-grants', () => {
  it('lists newest first, filters by agent and by status as of now, paginated', async ({ app, org }) => {
    const agent = await newAgent(org);
    const mk = (action: string, ttlSeconds: number) => call(org, { method: 'POST', url: BASE, payload: { agentId: agent, action, ttlSeconds, reason: 'r' } }).then((r) => r.json().data as Grant);
    const short = await mk('short', 60);
    app.clock.advance(1000);
    const long = await mk('long', 3600);
    app.clock.advance(1000);
    const req = await pending(app, org, { agentId: agent, action: 'asked' });
    app.clock.advance(60_000); // `short` is now expired
    const list = async (qs: string) => {
      const res = await call(org, { method: 'GET', url: `${BASE}?agentId=${agent}${qs}` });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { data: Grant[]; meta: { total: number; limit: number; offset: number } };
    };
    const all = await list('');
    expect(all.meta).toEqual({ total: 3, limit: 50, offset: 0 });
    expect(all.data.map((g) => g.id)).toEqual([req.id, long.id, short.id]);
    expect((await list('&status=approved')).data.map((g) => g.id)).toEqual([long.id]);
    expect((await list('&status=expired')).data.map((g) => g.id)).toEqual([short.id]);
    expect((await list('&status=pending')).data.map((g) => g.id)).toEqual([req.id]);
    const second = await list('&limit=1&offset=1');
    expect(second.data.map((g) => g.id)).toEqual([long.id]);
    expect(second.meta).toEqual({ total: 3, limit: 1, offset: 1 });
    expect((await call(org, { method: 'GET', url: `${BASE}?status=nope` })).statusCode).toBe(422);
  });
});

describe('organizations and agent keys', () => {
  it("another organization's grant is 404 on every route, and absent from its list", async ({ app, org }) => {
    const other = await createOrg(app, 'Other');
    const g = await pending(app, org);
    for (const [method, path] of [['GET', ''], ['POST', '/approve'], ['POST', '/deny'], ['DELETE', '']] as const) {
      const res = await other.req({ method, url: `${BASE}/${g.id}${path}` });
      expect(res.statusCode).toBe(404);
    }
    expect((await other.req({ method: 'GET', url: BASE })).json().meta.total).toBe(0);
    expect((await call(org, { method: 'GET', url: `${BASE}/${randomUUID()}` })).statusCode).toBe(404);
  });

  it('agent-scoped keys are refused on every grant route', async ({ app, org }) => {
    const created = await org.req({ method: 'POST', url: `/api/v1/agents/${agentId}/keys`, payload: { name: 'agent key' } });
    const key = created.json().data.key as string;
    const g = await pending(app, org);
    const routes = [['GET', BASE], ['POST', BASE], ['GET', `${BASE}/${g.id}`], ['POST', `${BASE}/${g.id}/approve`], ['POST', `${BASE}/${g.id}/deny`], ['DELETE', `${BASE}/${g.id}`]] as const;
    for (const [method, url] of routes) {
      const res = await org.req({ method, url, key, ...(method === 'POST' && url === BASE ? { payload: { agentId, action: 'x', ttlSeconds: 60, reason: 'r' } } : {}) });
      expect(res.statusCode).toBe(403);
    }
    expect((await call(org, { method: 'GET', url: `${BASE}/${g.id}` })).json().data.status).toBe('pending');
  });
});

describe('findLiveGrant', () => {
  it('matches the action glob and the resource glob when the grant has one', async ({ app, org }) => {
    const agent = await newAgent(org);
    await call(org, { method: 'POST', url: BASE, payload: { agentId: agent, action: 'db.*', resource: 'tables/orders*', ttlSeconds: 600, reason: 'r' } });
    const find = (action: string, resource?: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action, resource }, app.clock.now());
    expect(await find('db.read', 'tables/orders_2026')).toMatchObject({ action: 'db.*', status: 'approved' });
    expect(await find('db.read', 'tables/users')).toBeNull();
    expect(await find('db.read')).toBeNull();
    expect(await find('fs.read', 'tables/orders')).toBeNull();
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId, action: 'db.read', resource: 'tables/orders' }, app.clock.now())).toBeNull();
  });

  it('bound parameters: "send_email to alice" approved does not let "send_email to everyone" through', async ({ app, org }) => {
    const agent = await newAgent(org);
    const alice = parametersDigest({ to: 'alice@example.com', subject: 'hi' });
    const everyone = parametersDigest({ to: 'all@example.com', subject: 'hi' });
    const g = await pending(app, org, { agentId: agent, action: 'send_email', parametersDigest: alice });
    expect(g.parametersDigest).toBe(alice);
    expect((await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` })).statusCode).toBe(200);
    const find = (digest?: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action: 'send_email', parametersDigest: digest }, app.clock.now());
    expect((await find(alice))?.id).toBe(g.id);
    // Same parameters in another key order: same canonical JSON, same digest.
    expect((await find(parametersDigest({ subject: 'hi', to: 'alice@example.com' })))?.id).toBe(g.id);
    expect(await find(everyone)).toBeNull();
    expect(await find()).toBeNull();
  });

  it('absent parameters digest as {} (as the engine computes them), and a request without ttl lasts the default hour', async ({ app, org }) => {
    expect(parametersDigest(undefined)).toBe(parametersDigest({}));
    const agent = await newAgent(org);
    const g = await requestGrant(app.container.db, org.orgId, { agentId: agent, action: 'noop', requestedBy: dev.id, ttlSeconds: null }, app.clock.now());
    expect(Date.parse(g.expiresAt) - app.clock.now().getTime()).toBe(3_600_000);
  });

  it('an unbound grant allows any parameters', async ({ app, org }) => {
    const agent = await newAgent(org);
    const g = await pending(app, org, { agentId: agent, action: 'send_sms' });
    await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` });
    const find = (digest?: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action: 'send_sms', parametersDigest: digest }, app.clock.now());
    expect((await find(parametersDigest({ to: '+1' })))?.id).toBe(g.id);
    expect((await find())?.id).toBe(g.id);
  });

  it('finds a glob grant behind more than MAX_GRANTS_MATCHED longer-lived literal grants of other actions', async ({ app, org }) => {
    const agent = await newAgent(org);
    await call(org, { method: 'POST', url: BASE, payload: { agentId: agent, action: 'mail.*', ttlSeconds: 600, reason: 'r' } });
    const now = app.clock.now();
    const later = new Date(now.getTime() + 3_600_000);
    // Literal grants (as enforcement requests them) that sort before the glob grant by expiry.
    const rows = Array.from({ length: MAX_GRANTS_MATCHED + 100 }, (_, i) => ({
      organizationId: org.orgId, id: randomUUID(), agentId: agent, action: `tool_${i}`, status: 'approved', requestedBy: dev.id, requestedAt: now, decidedBy: adminKeyId, decidedAt: now, expiresAt: later,
    }));
    await app.container.db.insert(accessGrants).values(rows);
    const find = (action: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action }, now);
    expect(await find('mail.send')).toMatchObject({ action: 'mail.*' });
    expect(await find(`tool_${MAX_GRANTS_MATCHED + 50}`)).toMatchObject({ action: `tool_${MAX_GRANTS_MATCHED + 50}` });
    expect(await find('tool_x')).toBeNull();
  });

  it('a grant whose glob holds only escapes (no wildcard) is found: the SQL prefilter keeps rows with a backslash', async ({ app, org }) => {
    const agent = await newAgent(org);
    // `deploy\.prod` is the literal "deploy.prod", spelled with an escape: not equal to the escaped literal of the action.
    const res = await call(org, { method: 'POST', url: BASE, payload: { agentId: agent, action: 'deploy\\.prod', ttlSeconds: 600, reason: 'r' } });
    expect(res.statusCode, res.body).toBe(201);
    const find = (action: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action }, app.clock.now());
    expect(await find('deploy.prod')).toMatchObject({ action: 'deploy\\.prod' });
    expect(await find('deploy_prod')).toBeNull();
  });

  it('a pending or denied grant is not live', async ({ app, org }) => {
    const agent = await newAgent(org);
    const g = await pending(app, org, { agentId: agent, action: 'wait' });
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId: agent, action: 'wait' }, app.clock.now())).toBeNull();
    await call(org, { method: 'POST', url: `${BASE}/${g.id}/deny` });
    expect(await findLiveGrant(app.container.db, org.orgId, { agentId: agent, action: 'wait' }, app.clock.now())).toBeNull();
  });
});

describe('requestGrant', () => {
  it('is idempotent under 10 concurrent calls: one pending row, one audit entry', async ({ app, org }) => {
    const agent = await newAgent(org);
    const policyId = randomUUID();
    const digest = parametersDigest({ amount: 10 });
    const calls = Array.from({ length: 10 }, () =>
      requestGrant(app.container.db, org.orgId, { agentId: agent, action: 'pay', parametersDigest: digest, policyId, policyVersion: '2026-02-01T00:00:00.000Z', requestedBy: dev.id, ttlSeconds: 900, reason: 'policy Payments' }, app.clock.now()),
    );
    const grants = await Promise.all(calls);
    expect(new Set(grants.map((g) => g.id)).size).toBe(1);
    expect(grants[0]).toMatchObject({ status: 'pending', action: 'pay', policyId, policyVersion: '2026-02-01T00:00:00.000Z', parametersDigest: digest, reason: 'policy Payments' });
    const list = (await call(org, { method: 'GET', url: `${BASE}?agentId=${agent}` })).json();
    expect(list.meta.total).toBe(1);
    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceType=access_grant&resourceId=${grants[0].id}` });
    expect(audit.json().data.map((e: { action: string }) => e.action)).toEqual(['access_grant.request']);
  });

  it('another digest, resource or action is another request; a decided one makes room for a new request', async ({ app, org }) => {
    const agent = await newAgent(org);
    const base = { agentId: agent, action: 'pay', requestedBy: dev.id, ttlSeconds: 900 };
    const now = app.clock.now();
    const a = await requestGrant(app.container.db, org.orgId, base, now);
    const b = await requestGrant(app.container.db, org.orgId, { ...base, parametersDigest: parametersDigest({ amount: 1 }) }, now);
    const c = await requestGrant(app.container.db, org.orgId, { ...base, resource: 'acct/1' }, now);
    const d = await requestGrant(app.container.db, org.orgId, { ...base, action: 'refund' }, now);
    expect(new Set([a.id, b.id, c.id, d.id]).size).toBe(4);
    await call(org, { method: 'POST', url: `${BASE}/${a.id}/deny` });
    const e = await requestGrant(app.container.db, org.orgId, base, now);
    expect(e.id).not.toBe(a.id);
  });

  it('a requested action name is stored as a literal glob: `*` in a name matches only itself', async ({ app, org }) => {
    const agent = await newAgent(org);
    const g = await pending(app, org, { agentId: agent, action: 'weird*name' });
    expect(g.action).toBe('weird\\*name');
    await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` });
    const find = (action: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action }, app.clock.now());
    expect(await find('weird*name')).not.toBeNull();
    expect(await find('weird_other_name')).toBeNull();
  });

  it('a resource longer than a glob may be is kept as a literal and matched exactly', async ({ app, org }) => {
    const agent = await newAgent(org);
    const long = `https://api.example.com/${'a'.repeat(300)}?q=*`;
    const g = await pending(app, org, { agentId: agent, action: 'fetch', resource: long });
    expect((await call(org, { method: 'POST', url: `${BASE}/${g.id}/approve` })).statusCode).toBe(200);
    const find = (resource: string) => findLiveGrant(app.container.db, org.orgId, { agentId: agent, action: 'fetch', resource }, app.clock.now());
    expect((await find(long))?.id).toBe(g.id);
    expect(await find(`${long}x`)).toBeNull();
  });
});
