/**
 * The policy decision log and the policy stats (docs/decisions.md, "Decision log and policy stats"):
 * decisions are recorded through the module's service (as the enforce route does), flushed, and read
 * back through HTTP on a real database.
 */
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import type { Db } from '../src/db/client.js';
import { DecisionLog, type DecisionRecordInput } from '../src/domains/policy-decisions/index.js';
import { deleteExpiredDecisions } from '../src/domains/policy-decisions/service.js';
import type { TaskLogger } from '../src/core/module.js';
import { vi } from 'vitest';
import { parseConfig } from '../src/config.js';
import { assemble } from '../src/container.js';
import { TestClock } from '../src/core/clock.js';
import { startProcess } from '../src/jobs/process.js';
import { memoryState } from '../src/lib/shared-state.js';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createTestApp, createOrg, openTestDatabase, testDatabaseUrl, type TestApp, type TestOrg } from './helpers.js';

const HOUR = 3_600_000;
const SECRET = '4111 1111 1111 1111';

type Violation = DecisionRecordInput['violations'][number];

let agentA: string;
let agentB: string;
let pDeny: string; // block
let pWarn: string; // warn mode
let pQuiet: string; // evaluated, never matches
let pApproval: string; // action_approval

interface Policies { pDeny: string; pWarn: string; pQuiet: string; pApproval: string }
// The four policies of an organization whose stats a test reads (decisions name them); others use the file org's.
const policiesOf = new Map<string, Policies>();
const idsOf = (org: TestOrg): Policies => policiesOf.get(org.orgId) ?? { pDeny, pWarn, pQuiet, pApproval };

/** Creates the four policies in `org` (so the stats can name them) and uses them for its decisions. */
async function usePolicies(org: TestOrg): Promise<Policies> {
  const p = {
    pDeny: await createPolicy(org, 'No cards'),
    pWarn: await createPolicy(org, 'Watch cards', { enforcementMode: 'warn' }),
    pQuiet: await createPolicy(org, 'Quiet', { policyType: 'access_control', ruleDefinition: { denyActions: ['drop_*'] } }),
    pApproval: await createPolicy(org, 'Approve email', { policyType: 'action_approval', ruleDefinition: { actions: ['send_*'] } }),
  };
  policiesOf.set(org.orgId, p);
  return p;
}

async function createAgent(org: TestOrg) {
  const res = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } });
  expect(res.statusCode).toBe(201);
  return res.json().data.id as string;
}

async function createPolicy(org: TestOrg, name: string, body: Record<string, unknown> = {}) {
  const res = await org.req({
    method: 'POST', url: '/api/v1/policies',
    payload: { name, policyType: 'data_restriction', ruleDefinition: { detect: ['credit_card'], scope: 'input' }, enforcementMode: 'block', ...body },
  });
  expect(res.statusCode).toBe(201);
  return res.json().data.id as string;
}

const violation = (policyId: string | null, mode: Violation['enforcementMode'], extra: Partial<Violation> = {}): Violation => ({
  policyId, policyName: 'p', policyType: policyId ? 'data_restriction' : 'kill_switch', code: policyId ? 'pii.credit_card' : 'agent.paused',
  message: 'matched', enforcementMode: mode, ...extra,
});

/** A decision of `org` for agent A at `at`, evaluating the four policies; overrides replace fields. */
function decision(org: TestOrg, at: Date, o: Partial<DecisionRecordInput> = {}): DecisionRecordInput {
  const { pDeny, pWarn, pQuiet, pApproval } = idsOf(org);
  return {
    organizationId: org.orgId, decisionId: randomUUID(), agentId: agentA, environment: 'production',
    action: { type: 'tool_call', name: 'send_email', resource: 'smtp://mail' },
    decision: 'allow', violations: [], warnings: [], evaluatedPolicyIds: [pDeny, pWarn, pQuiet, pApproval], evaluationMs: 0.42,
    accessGrantId: null, sessionId: 's-1', traceId: 't-1', userId: 'u-1', events: [], at, ...o,
  };
}

const denied = (org: TestOrg, at: Date, o: Partial<DecisionRecordInput> = {}) =>
  decision(org, at, { decision: 'deny', violations: [violation(idsOf(org).pDeny, 'block', { evidence: { path: 'input', start: 12, end: 31, score: 1 } })], warnings: [violation(idsOf(org).pWarn, 'warn')], ...o });

const services = (app: TestApp) => app.container.services.policyDecisions;

async function list(org: TestOrg, query = '', key?: string) {
  const res = await org.req({ method: 'GET', url: `/api/v1/policies/decisions${query}`, key });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { data: { decisionId: string; agentId: string; decision: string; createdAt: string; violations: Violation[] }[]; meta: { total: number; limit: number; offset: number } };
}

/** A logger that keeps what it is told. */
function memoryLogger() {
  const lines: { level: string; obj: object; msg: string }[] = [];
  const log: TaskLogger = { warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }), error: (obj, msg) => lines.push({ level: 'error', obj, msg }) };
  return { log, lines };
}

/** The app's database, whose transactions fail (like a lost connection) while `failing()` says so. */
function flakyDb(db: Db, failing: () => boolean): Db {
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'transaction' && failing()) return async () => { throw new Error('connection terminated unexpectedly'); };
      return Reflect.get(target, prop, receiver);
    },
  });
}

beforeAll(async ({ org }) => {
  agentA = await createAgent(org);
  agentB = await createAgent(org);
  pDeny = await createPolicy(org, 'No cards');
  pWarn = await createPolicy(org, 'Watch cards', { enforcementMode: 'warn' });
  pQuiet = await createPolicy(org, 'Quiet', { policyType: 'access_control', ruleDefinition: { denyActions: ['drop_*'] } });
  pApproval = await createPolicy(org, 'Approve email', { policyType: 'action_approval', ruleDefinition: { actions: ['send_*'] } });
});

describe('the decision log', () => {
  it('stores deny and require_approval decisions, not allow ones, and lists them newest first', async ({ app, freshOrg }) => {
    const now = app.clock.now();
    const ra = decision(freshOrg, new Date(now.getTime() - 1000), {
      decision: 'require_approval', violations: [violation(pApproval, 'require_approval')], accessGrantId: randomUUID(),
    });
    const deny = denied(freshOrg, now);
    const allow = decision(freshOrg, new Date(now.getTime() - 2000));
    services(app).record(allow);
    services(app).record(ra);
    services(app).record(deny);
    await services(app).flush();

    const page = await list(freshOrg);
    expect(page.meta).toEqual({ total: 2, limit: 50, offset: 0 });
    expect(page.data.map((d) => d.decisionId)).toEqual([deny.decisionId, ra.decisionId]);
    const one = await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${deny.decisionId}` });
    expect(one.statusCode).toBe(200);
    expect(one.json().data).toEqual({
      decisionId: deny.decisionId, organizationId: freshOrg.orgId, agentId: agentA, environment: 'production',
      action: { type: 'tool_call', name: 'send_email', resource: 'smtp://mail' }, decision: 'deny',
      violations: [violation(pDeny, 'block', { evidence: { path: 'input', start: 12, end: 31, score: 1 } })],
      warnings: [violation(pWarn, 'warn')], evaluatedPolicies: 4, evaluationMs: 0.42, accessGrantId: null,
      sessionId: 's-1', traceId: 't-1', userId: 'u-1', createdAt: now.toISOString(),
    });
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${ra.decisionId}` })).json().data.accessGrantId).toBe(ra.accessGrantId);
    // The allow decision was counted, not stored.
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${allow.decisionId}` })).statusCode).toBe(404);
  });

  it('filters by agentId, policyId, decision and from/to, and pages', async ({ app, freshOrg }) => {
    const t0 = app.clock.now().getTime();
    const a1 = denied(freshOrg, new Date(t0 - 3 * HOUR));
    const a2 = decision(freshOrg, new Date(t0 - 2 * HOUR), { decision: 'require_approval', violations: [violation(pApproval, 'require_approval')] });
    const b1 = denied(freshOrg, new Date(t0 - HOUR), { agentId: agentB });
    const kill = decision(freshOrg, new Date(t0), { decision: 'deny', violations: [violation(null, 'block')], evaluatedPolicyIds: [] });
    for (const d of [a1, a2, b1, kill]) services(app).record(d);
    await services(app).flush();

    const ids = async (q: string) => (await list(freshOrg, q)).data.map((d) => d.decisionId);
    expect(await ids('')).toEqual([kill, b1, a2, a1].map((d) => d.decisionId));
    expect(await ids(`?agentId=${agentB}`)).toEqual([b1.decisionId]);
    expect(await ids(`?policyId=${pDeny}`)).toEqual([b1.decisionId, a1.decisionId]);
    expect(await ids(`?policyId=${pApproval}`)).toEqual([a2.decisionId]);
    expect(await ids(`?policyId=${pWarn}`)).toEqual([]); // warnings are not violations
    expect(await ids('?decision=require_approval')).toEqual([a2.decisionId]);
    expect(await ids(`?from=${new Date(t0 - 2 * HOUR).toISOString()}&to=${new Date(t0 - HOUR).toISOString()}`)).toEqual([b1.decisionId, a2.decisionId]);
    expect(await ids(`?agentId=${agentA}&decision=deny`)).toEqual([kill.decisionId, a1.decisionId]);
    const p = await list(freshOrg, '?limit=2&offset=1');
    expect(p.meta).toEqual({ total: 4, limit: 2, offset: 1 });
    expect(p.data.map((d) => d.decisionId)).toEqual([b1.decisionId, a2.decisionId]);
    for (const q of ['?decision=allow', '?limit=0', '?limit=101', '?agentId=x', '?from=yesterday', '?policyId=1']) {
      expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions${q}` })).statusCode, q).toBe(422);
    }
  });

  it("answers 404 for another organization's decision, an unknown id and a malformed one", async ({ app, org, freshOrg }) => {
    const d = denied(org, app.clock.now());
    services(app).record(d);
    await services(app).flush();
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}` })).statusCode).toBe(200);
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}` })).statusCode).toBe(404);
    expect((await list(freshOrg)).data.map((x) => x.decisionId)).not.toContain(d.decisionId);
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/decisions/${randomUUID()}` })).statusCode).toBe(404);
    expect((await org.req({ method: 'GET', url: '/api/v1/policies/decisions/not-a-uuid' })).statusCode).toBe(404);
  });

  it("shows an agent-scoped key only its own agent's decisions", async ({ app, org }) => {
    const mine = denied(org, app.clock.now());
    const theirs = denied(org, app.clock.now(), { agentId: agentB });
    services(app).record(mine);
    services(app).record(theirs);
    await services(app).flush();
    const key = (await org.req({ method: 'POST', url: `/api/v1/agents/${agentA}/keys`, payload: { name: 'sdk' } })).json().data.key as string;
    const seen = await list(org, '', key);
    expect(seen.data.every((d) => d.agentId === agentA)).toBe(true);
    expect(seen.data.map((d) => d.decisionId)).toContain(mine.decisionId);
    expect((await list(org, `?agentId=${agentB}`, key)).data).toEqual([]);
    expect((await org.req({ key, method: 'GET', url: `/api/v1/policies/decisions/${mine.decisionId}` })).statusCode).toBe(200);
    expect((await org.req({ key, method: 'GET', url: `/api/v1/policies/decisions/${theirs.decisionId}` })).statusCode).toBe(404);
    // Stats are analytics (scope analytics:read), which agent keys do not hold.
    expect((await org.req({ key, method: 'GET', url: '/api/v1/policies/stats' })).statusCode).toBe(403);
  });

  it('never returns the matched text: the evidence is offsets, and extra fields of a violation are not stored', async ({ app, freshOrg }) => {
    const leaky = { ...violation(pDeny, 'block', { evidence: { path: 'input.card', start: 0, end: SECRET.length, score: 0.99 } }), match: SECRET, evidence: { path: 'input.card', start: 0, end: SECRET.length, score: 0.99, text: SECRET } } as Violation;
    const d = denied(freshOrg, app.clock.now(), { violations: [leaky] });
    services(app).record(d);
    await services(app).flush();
    const res = await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('4111');
    expect(res.json().data.violations[0].evidence).toEqual({ path: 'input.card', start: 0, end: SECRET.length, score: 0.99 });
    expect((await list(freshOrg)).data[0].violations[0]).not.toHaveProperty('match');
  });

  it('stores a message with a NUL or an unpaired surrogate (a custom validator may answer one) instead of failing the batch', async ({ app, freshOrg }) => {
    const d = denied(freshOrg, app.clock.now(), { violations: [violation(idsOf(freshOrg).pDeny, 'block', { message: 'no\u0000pe \ud800!' })] });
    const fine = denied(freshOrg, app.clock.now());
    services(app).record(d);
    services(app).record(fine);
    await services(app).flush();
    const res = await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}` });
    expect(res.json().data.violations[0].message).toBe('nope \ufffd!');
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${fine.decisionId}` })).statusCode).toBe(200);
  });

  it('is not captured by /policies/{id}, which still serves policies', async ({ org }) => {
    expect((await org.req({ method: 'GET', url: '/api/v1/policies/decisions' })).json()).toHaveProperty('meta.total');
    expect((await org.req({ method: 'GET', url: '/api/v1/policies/stats' })).json()).toHaveProperty('data.totals');
    expect((await org.req({ method: 'GET', url: `/api/v1/policies/${pDeny}` })).json().data.name).toBe('No cards');
  });
});

describe('policy stats', () => {
  it('counts per policy over the window: deny, require_approval, warn and allow; the kill switch under none', async ({ app, freshOrg }) => {
    const { pDeny, pWarn, pQuiet, pApproval } = await usePolicies(freshOrg);
    const now = app.clock.now().getTime();
    const rec = (d: DecisionRecordInput) => services(app).record(d);
    rec(denied(freshOrg, new Date(now))); // pDeny deny, pWarn warn, pQuiet + pApproval allow
    rec(denied(freshOrg, new Date(now - 2 * HOUR), { agentId: agentB }));
    rec(decision(freshOrg, new Date(now - HOUR), { decision: 'require_approval', violations: [violation(pApproval, 'require_approval')] }));
    rec(decision(freshOrg, new Date(now - 5 * 60_000))); // all four allow
    rec(denied(freshOrg, new Date(now - 30 * HOUR))); // outside 24 h
    rec(decision(freshOrg, new Date(now), { decision: 'deny', violations: [violation(null, 'block')], evaluatedPolicyIds: [] })); // kill switch
    await services(app).flush();

    const stats = async (q: string) => {
      const res = await freshOrg.req({ method: 'GET', url: `/api/v1/policies/stats${q}` });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data as { hours: number; policies: { policyId: string; policyName: string | null; allow: number; deny: number; requireApproval: number; warn: number }[]; totals: Record<string, number> };
    };
    const byId = (s: Awaited<ReturnType<typeof stats>>) => Object.fromEntries(s.policies.map(({ policyId, ...rest }) => [policyId, rest]));
    const day = await stats('');
    expect(day.hours).toBe(24);
    expect(byId(day)).toEqual({
      [pDeny]: { policyName: 'No cards', allow: 2, deny: 2, requireApproval: 0, warn: 0 },
      [pWarn]: { policyName: 'Watch cards', allow: 2, deny: 0, requireApproval: 0, warn: 2 },
      [pQuiet]: { policyName: 'Quiet', allow: 4, deny: 0, requireApproval: 0, warn: 0 },
      [pApproval]: { policyName: 'Approve email', allow: 3, deny: 0, requireApproval: 1, warn: 0 },
    });
    expect(day.totals).toEqual({ allow: 11, deny: 2, requireApproval: 1, warn: 2 });
    // hours=48 takes in the decision of 30 hours ago.
    expect(byId(await stats('?hours=48'))[pDeny]).toMatchObject({ deny: 3, allow: 2 });
    // One agent.
    expect(byId(await stats(`?agentId=${agentB}`))).toEqual({
      [pDeny]: { policyName: 'No cards', allow: 0, deny: 1, requireApproval: 0, warn: 0 },
      [pWarn]: { policyName: 'Watch cards', allow: 0, deny: 0, requireApproval: 0, warn: 1 },
      [pQuiet]: { policyName: 'Quiet', allow: 1, deny: 0, requireApproval: 0, warn: 0 },
      [pApproval]: { policyName: 'Approve email', allow: 1, deny: 0, requireApproval: 0, warn: 0 },
    });
    // A second flush adds to the same buckets.
    rec(denied(freshOrg, new Date(now)));
    await services(app).flush();
    expect(byId(await stats(''))[pDeny]).toMatchObject({ deny: 3 });
    // The clock moves on: 30 hours later, only the newest buckets are gone from a 24 h window.
    app.clock.advance(30 * HOUR);
    try {
      expect((await stats('')).policies).toEqual([]);
      expect(byId(await stats('?hours=31'))[pQuiet]).toMatchObject({ allow: 4 });
    } finally {
      app.clock.advance(-30 * HOUR);
    }
    for (const q of ['?hours=0', '?hours=721', '?hours=x', '?agentId=nope']) {
      expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/stats${q}` })).statusCode, q).toBe(422);
    }
  });

  it('names a deleted policy null, and another organization sees none of the counts', async ({ app, org, freshOrg }) => {
    const gone = await createPolicy(freshOrg, 'Soon gone');
    const agent = await createAgent(freshOrg);
    services(app).record(decision(freshOrg, app.clock.now(), { agentId: agent, decision: 'deny', violations: [violation(gone, 'block')], evaluatedPolicyIds: [gone] }));
    await services(app).flush();
    expect((await freshOrg.req({ method: 'DELETE', url: `/api/v1/policies/${gone}` })).statusCode).toBe(204);
    const s = (await freshOrg.req({ method: 'GET', url: '/api/v1/policies/stats' })).json().data;
    expect(s.policies).toEqual([{ policyId: gone, policyName: null, allow: 0, deny: 1, requireApproval: 0, warn: 0 }]);
    const other = (await org.req({ method: 'GET', url: '/api/v1/policies/stats' })).json().data;
    expect(other.policies.map((p: { policyId: string }) => p.policyId)).not.toContain(gone);
  });
});

describe('counter retention', () => {
  it('deletes buckets older than the longest stats window (and a day), keeps the others', async ({ app, freshOrg }) => {
    const { pDeny } = await usePolicies(freshOrg);
    const now = app.clock.now().getTime();
    services(app).record(denied(freshOrg, new Date(now - 800 * HOUR)));
    services(app).record(denied(freshOrg, new Date(now - 700 * HOUR)));
    await services(app).flush();
    const denies = async () => (await freshOrg.req({ method: 'GET', url: '/api/v1/policies/stats?hours=720' })).json().data.policies.find((p: { policyId: string }) => p.policyId === pDeny)?.deny;
    expect(await denies()).toBe(1); // the 800 h old bucket is outside every window already
    const { deleted } = await services(app).deleteExpiredCounts();
    expect(deleted).toBeGreaterThanOrEqual(4); // the old bucket's four policies (other files' organizations do not share this database)
    expect(await denies()).toBe(1);
    app.clock.advance(100 * HOUR);
    try {
      expect((await services(app).deleteExpiredCounts()).deleted).toBeGreaterThanOrEqual(4);
    } finally {
      app.clock.advance(-100 * HOUR);
    }
    expect(await denies()).toBeUndefined();
  });
});

describe('decision retention (DECISION_RETENTION_DAYS, default 90)', () => {
  const DAY = 24 * HOUR;

  it('deletes decision rows older than the cutoff at the injected clock, in bounded runs; keeps the newer ones', async ({ app, freshOrg }) => {
    await usePolicies(freshOrg);
    const now = app.clock.now().getTime();
    const at = (days: number) => denied(freshOrg, new Date(now - days * DAY));
    const [d120, d100, d95, d89, d1] = [120, 100, 95, 89, 1].map(at);
    for (const d of [d120, d100, d95, d89, d1]) services(app).record(d);
    await services(app).flush();
    const ids = async () => (await list(freshOrg, '?limit=100')).data.map((d) => d.decisionId).sort();
    expect(await ids()).toHaveLength(5);

    // Retention off: nothing goes.
    expect(await deleteExpiredDecisions(app.database.db, 0, app.clock.now())).toEqual({ deleted: 0, more: false });
    expect(await ids()).toHaveLength(5);

    // A run capped at two statements of one row leaves the rest to the next run.
    expect(await services(app).deleteExpiredDecisions({ batchSize: 1, maxBatches: 2 })).toEqual({ deleted: 2, more: true });
    expect((await services(app).deleteExpiredDecisions()).more).toBe(false);
    expect(await ids()).toEqual([d89.decisionId, d1.decisionId].sort());

    // Two days later the 89-day-old decision is past the cutoff too.
    app.clock.advance(2 * DAY);
    try {
      await services(app).deleteExpiredDecisions();
    } finally {
      app.clock.advance(-2 * DAY);
    }
    expect(await ids()).toEqual([d1.decisionId]);
  });
});

describe('counting', () => {
  it('counts each listed policy once per decision: a list seen before, matches moving a policy off allow, a changed list, a match not listed, counters past maxCounterKeys dropped and counted', async ({ app, freshOrg }) => {
    const { pDeny, pWarn, pQuiet, pApproval } = await usePolicies(freshOrg);
    let fail = false;
    const log = new DecisionLog({ db: flakyDb(app.database.db, () => fail), maxCounterKeys: 3 });
    const at = app.clock.now();
    // A new array with the same ids every time, as the engine builds one per decision.
    const three = () => [pDeny, pWarn, pQuiet];
    for (let i = 0; i < 3; i++) log.record(decision(freshOrg, at, { evaluatedPolicyIds: three() }));
    log.record(decision(freshOrg, at, { evaluatedPolicyIds: three(), warnings: [violation(pWarn, 'warn')] }));
    // The stronger outcome wins when a policy is both a violation and a warning.
    log.record(decision(freshOrg, at, { decision: 'deny', evaluatedPolicyIds: three(), violations: [violation(pDeny, 'block')], warnings: [violation(pDeny, 'monitor')] }));
    // A failed flush puts the counters back; counting goes on into them.
    fail = true;
    await expect(log.flush()).rejects.toThrow(/connection/);
    fail = false;
    log.record(decision(freshOrg, at, { evaluatedPolicyIds: three() }));
    // Another list: pApproval would be a fourth counter, beyond maxCounterKeys (3).
    log.record(decision(freshOrg, at, { evaluatedPolicyIds: [pQuiet, pApproval] }));
    expect(log.counts.droppedCounts).toBe(1);
    // Lists that alternate (environment-scoped policies): each kept, each counted.
    for (let i = 0; i < 3; i++) {
      log.record(decision(freshOrg, at, { evaluatedPolicyIds: [pWarn, pQuiet] }));
      log.record(decision(freshOrg, at, { evaluatedPolicyIds: three(), warnings: [violation(pQuiet, 'warn')] }));
    }
    // A warning of a policy the decision does not list still counts.
    log.record(decision(freshOrg, at, { evaluatedPolicyIds: [pDeny], warnings: [violation(pWarn, 'warn')] }));
    await log.flush();
    const res = await freshOrg.req({ method: 'GET', url: '/api/v1/policies/stats' });
    const by = (id: string) => res.json().data.policies.find((p: { policyId: string }) => p.policyId === id);
    expect(by(pDeny)).toMatchObject({ allow: 9, deny: 1, requireApproval: 0, warn: 0 });
    expect(by(pWarn)).toMatchObject({ allow: 11, deny: 0, requireApproval: 0, warn: 2 });
    expect(by(pQuiet)).toMatchObject({ allow: 10, deny: 0, requireApproval: 0, warn: 3 });
    expect(by(pApproval)).toBeUndefined();
  });
});

describe('flushing', () => {
  it("writes the decisions' events to the outbox in the flush, when a webhook wants their type", async ({ app, freshOrg }) => {
    const outbox = () => app.database.db.select().from(outboxEvents).where(and(eq(outboxEvents.organizationId, freshOrg.orgId), eq(outboxEvents.type, 'policy_violated')));
    const event = { type: 'policy_violated' as const, policyId: pDeny, data: { policyId: pDeny, code: 'pii.credit_card' } };
    // Nobody subscribes (the default until webhooks exist): no outbox row, the decision is still logged.
    const quiet = denied(freshOrg, app.clock.now(), { events: [event] });
    services(app).record(quiet);
    await services(app).flush();
    expect(await outbox()).toEqual([]);
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${quiet.decisionId}` })).statusCode).toBe(200);

    const wanted: string[] = [];
    const log = new DecisionLog({ db: app.database.db, subscriptions: { wants: async (_org, type) => (wanted.push(type), type === 'policy_violated') } });
    log.record(denied(freshOrg, app.clock.now(), { events: [event, { type: 'custom_validator_invoked', policyId: pDeny, data: {} }] }));
    log.record(decision(freshOrg, app.clock.now(), { events: [event] }));
    expect(await outbox()).toEqual([]); // nothing before the flush
    await log.flush();
    const rows = await outbox();
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.agentId === agentA && (r.data as { code: string }).code === 'pii.credit_card')).toBe(true);
    // Asked once per (organization, type) in the batch.
    expect(wanted.sort()).toEqual(['custom_validator_invoked', 'policy_violated']);
  });

  it('two instances flushing the same counters at once add up exactly', async ({ app, freshOrg }) => {
    const { pDeny } = await usePolicies(freshOrg);
    const agents = [agentA, agentB];
    const logs = [new DecisionLog({ db: app.database.db }), new DecisionLog({ db: app.database.db })];
    for (let round = 0; round < 3; round++) {
      for (const log of logs) {
        // Keys in opposite orders in the two logs: the flush sorts them, so the row locks are taken in one order.
        for (const agentId of log === logs[0] ? agents : [...agents].reverse()) {
          for (let i = 0; i < 20; i++) log.record(denied(freshOrg, app.clock.now(), { agentId }));
        }
      }
      await Promise.all(logs.map((l) => l.flush()));
    }
    const s = (await freshOrg.req({ method: 'GET', url: '/api/v1/policies/stats' })).json().data;
    expect(s.policies.find((p: { policyId: string }) => p.policyId === pDeny)).toMatchObject({ deny: 2 * 3 * 2 * 20 });
    expect((await list(freshOrg)).meta.total).toBe(240);
  });

  it('keeps the batch when the flush fails, and writes it on the next flush', async ({ app, freshOrg }) => {
    await usePolicies(freshOrg);
    let fail = true;
    const log = new DecisionLog({ db: flakyDb(app.database.db, () => fail) });
    const d = denied(freshOrg, app.clock.now());
    log.record(d);
    log.record(decision(freshOrg, app.clock.now()));
    await expect(log.flush()).rejects.toThrow(/connection/);
    expect(log.held()).toMatchObject({ rows: 1, counterKeys: 4 });
    expect(log.counts.failedFlushes).toBe(1);
    fail = false;
    await log.flush();
    expect(log.held()).toEqual({ rows: 0, counterKeys: 0, events: 0 });
    expect((await freshOrg.req({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}` })).statusCode).toBe(200);
    const s = (await freshOrg.req({ method: 'GET', url: '/api/v1/policies/stats' })).json().data;
    expect(s.totals).toEqual({ allow: 6, deny: 1, requireApproval: 0, warn: 1 });
  });

  it('bounds the buffer: at it record() starts a flush, and while the database is down the oldest rows are dropped, counted and logged', async ({ app, freshOrg }) => {
    let fail = true;
    const log = new DecisionLog({ db: flakyDb(app.database.db, () => fail), maxBuffered: 3 });
    const ds = Array.from({ length: 10 }, (_, i) => denied(freshOrg, new Date(app.clock.now().getTime() + i)));
    for (const d of ds) log.record(d); // kicks flushes, which fail
    await log.flush().catch(() => undefined);
    expect(log.held().rows).toBe(3);
    expect(log.counts.droppedRows).toBe(7);
    const { log: logger, lines } = memoryLogger();
    await log.flushAndReport(logger);
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/flush failed; the batch is kept/), expect.stringMatching(/dropped the oldest/)]);
    expect(lines[1].obj).toMatchObject({ droppedRows: 7 });
    fail = false;
    await log.flushAndReport(logger);
    expect(lines).toHaveLength(2); // nothing new to report
    const page = await list(freshOrg);
    expect(page.data.map((d) => d.decisionId)).toEqual(ds.slice(7).reverse().map((d) => d.decisionId));
  });

  it('during an outage a full buffer is not retried on every decision: only reaching the bound starts a flush', async ({ app, freshOrg }) => {
    const log = new DecisionLog({ db: flakyDb(app.database.db, () => true), maxBuffered: 5 });
    const settle = () => new Promise((r) => setImmediate(r));
    for (let i = 0; i < 50; i++) {
      log.record(denied(freshOrg, new Date(app.clock.now().getTime() + i)));
      await settle(); // each started flush fails before the next decision
    }
    expect(log.counts.failedFlushes).toBe(1);
    expect(log.held().rows).toBe(5);
    expect(log.counts.droppedRows).toBe(45);
  });

  it('record() never throws, and a malformed record does not lose the rest of the batch', async ({ app, freshOrg }) => {
    const good = denied(freshOrg, app.clock.now());
    expect(() => services(app).record(null as unknown as DecisionRecordInput)).not.toThrow();
    expect(() => services(app).record({ ...good, decisionId: randomUUID(), at: 'not a date' } as unknown as DecisionRecordInput)).not.toThrow();
    services(app).record(good);
    await services(app).flush();
    expect((await list(freshOrg)).data.map((d) => d.decisionId)).toEqual([good.decisionId]);
  });

  it('a batch the database refuses for good is discarded (counted), so it never holds back later ones; malformed records are skipped first', async ({ app, freshOrg }) => {
    let refuse = true;
    const db = new Proxy(app.database.db, {
      get(target, prop, receiver) {
        if (prop === 'transaction' && refuse) return async () => { throw Object.assign(new Error('invalid input syntax'), { code: '22P02' }); };
        return Reflect.get(target, prop, receiver);
      },
    });
    const log = new DecisionLog({ db });
    log.record(denied(freshOrg, app.clock.now()));
    log.record(denied(freshOrg, app.clock.now(), { agentId: 'not-a-uuid' }));
    log.record(denied(freshOrg, app.clock.now(), { evaluationMs: Number.NaN }));
    await expect(log.flush()).rejects.toThrow(/invalid input/);
    expect(log.counts).toMatchObject({ discardedRows: 1, skippedInvalid: 2 });
    expect(log.held().rows).toBe(0);
    refuse = false;
    const ok = denied(freshOrg, app.clock.now());
    log.record(ok);
    await log.flush();
    expect((await list(freshOrg)).data.map((d) => d.decisionId)).toEqual([ok.decisionId]);
  });

  it('each API instance flushes on its runner every DECISIONS_FLUSH_INTERVAL_MS (a process-local task of the module)', async () => {
    const clock = new TestClock('2030-01-15T10:00:00Z');
    const config = parseConfig({ LOG_LEVEL: 'silent', DATABASE_URL: process.env.DATABASE_URL ? await testDatabaseUrl() : '', DECISIONS_FLUSH_INTERVAL_MS: '200', JOBS_POLL_INTERVAL_MS: '20' });
    const database = await openTestDatabase();
    const state = memoryState();
    const proc = await startProcess(assemble({ config, database, state, clock }));
    try {
      const org = await proc.app.deps.services.organizations.create({ name: `Flush ${randomUUID().slice(0, 6)}` });
      const testOrg = { orgId: org.organization.id, key: org.key } as TestOrg;
      const d = denied(testOrg, clock.now());
      proc.app.deps.services.policyDecisions.record(d);
      const get = () => proc.app.inject({ method: 'GET', url: `/api/v1/policies/decisions/${d.decisionId}`, headers: { 'x-api-key': org.key } });
      await new Promise((r) => setTimeout(r, 100));
      expect((await get()).statusCode).toBe(404); // not due yet
      clock.advance(200);
      await vi.waitFor(async () => expect((await get()).statusCode).toBe(200), { timeout: 4000, interval: 25 });
    } finally {
      await proc.close();
      await state.close();
      await database.close();
    }
  });

  it('the app flushes what is buffered when it closes', async () => {
    const t = await createTestApp();
    try {
      const org = await createOrg(t);
      const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: 'closing', name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data.id;
      const d = { ...denied(org, t.clock.now()), agentId: agent };
      t.container.services.policyDecisions.record(d);
      await t.app.close();
      const { policyDecisions } = await import('../src/db/schema/index.js');
      const rows = await t.database.db.select().from(policyDecisions).where(eq(policyDecisions.id, d.decisionId));
      expect(rows).toHaveLength(1);
    } finally {
      await t.container.close();
    }
  });
});
