/**
 * Webhook delivery end to end: real events through the outbox, the job runner and a real local
 * receiver (node:http); signatures checked with the `standardwebhooks` package and our verifyWebhook
 * (docs/decisions.md, "Webhooks"). Time moves on the app's injected clock, never by sleeping.
 */
import { and, eq, sql } from 'drizzle-orm';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { webhookMessages, webhooks } from '../src/db/schema/index.js';
import type { JobRunner } from '../src/jobs/index.js';
import { TestClock } from '../src/core/clock.js';
import { assemble } from '../src/container.js';
import { WebhookDelivery } from '../src/domains/webhooks/delivery.js';
import { retentionCutoff } from '../src/db/retention.js';
import { verifyWebhook } from '../src/webhooks-verify.js';
import { createTestApp, withTestApp, type TestApp, type TestOrg } from './helpers.js';
import { afterAll, beforeAll, describe, expect, it } from './fixture.js';
import { eventually, startReceiver, startRunner, type Receiver } from './webhooks-support.js';

let runner: JobRunner;
beforeAll(async ({ app }) => {
  runner = await startRunner(app);
});
afterAll(async () => {
  await runner.stop(1000);
});

let agentN = 0;
async function registerAgent(org: TestOrg, name = `agent-${++agentN}`) {
  const r = await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: name, name, type: 'chatbot', platform: 'custom', environment: 'development' } });
  expect(r.statusCode).toBe(201);
  return r.json().data as { id: string; agentId: string };
}

async function createHook(org: TestOrg, rx: Receiver | string, extra: Record<string, unknown> = {}) {
  const r = await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: { name: 'rx', url: typeof rx === 'string' ? rx : rx.url, eventTypes: ['agent_registered'], retryBackoffSeconds: 1, ...extra } });
  expect(r.statusCode, r.body).toBe(201);
  return r.json().data as { id: string; secret: string };
}

const deliveries = async (org: TestOrg, id: string) => (await org.req({ method: 'GET', url: `/api/v1/webhooks/${id}/deliveries?limit=100` })).json().data as {
  id: string;
  attemptNumber: number;
  success: boolean;
  statusCode: number | null;
  errorMessage: string | null;
  responseBody: string | null;
  idempotencyKey: string;
  eventId: string;
  payload: { id: string };
  createdAt: string;
}[];

/** A second dispatcher on the file app's database (or `db`), its injected clock `aheadMs` ahead of the app's. */
const otherDispatcher = (t: TestApp, aheadMs: number, db = t.database.db) =>
  new WebhookDelivery({ db, clock: new TestClock(t.clock.now().getTime() + aheadMs), settings: t.container.services.webhooks.settings, onDisabled: async () => {} });

const hookRow = async (t: TestApp, orgId: string, id: string) => (await t.database.db.select().from(webhooks).where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, id))))[0];

describe('delivery', () => {
  it('delivers a real event with valid v2 and Standard Webhooks signatures', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    try {
      const hook = await createHook(org, rx, { customHeaders: { 'X-Team': 'ops' } });
      const agent = await registerAgent(org);
      const [got] = await rx.waitFor(1);
      const body = JSON.parse(got.body);
      expect(body).toMatchObject({ type: 'agent_registered', organizationId: org.orgId, agentId: agent.id, data: { agent: { id: agent.id } } });
      expect(Object.keys(body).sort()).toEqual(['agentId', 'createdAt', 'data', 'id', 'organizationId', 'type']);
      expect(got.headers['content-type']).toBe('application/json');
      expect(got.headers['user-agent']).toMatch(/^agent-governance-webhooks\//);
      expect(got.headers['x-team']).toBe('ops');
      expect(got.headers['x-service-signature-version']).toBe('v2');
      expect(got.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(got.headers['x-service-timestamp']).toBe(got.headers['webhook-timestamp']);
      expect(got.headers['webhook-id']).toBe(body.id);
      expect(got.headers['x-service-idempotency-key']).toMatch(/^[0-9a-f]{64}$/);

      // The public library verifies the Standard Webhooks headers.
      expect(new StandardWebhook(hook.secret).verify(got.body, got.headers as Record<string, string>)).toEqual(body);
      // Ours verifies X-Service (v2) and, without them, the Standard Webhooks headers.
      expect(verifyWebhook(got.body, got.headers, hook.secret).scheme).toBe('x-service-v2');
      const { ['x-service-signature']: _s, ...standardOnly } = got.headers;
      expect(verifyWebhook(got.body, standardOnly, hook.secret).scheme).toBe('standard-webhooks');
      expect(() => verifyWebhook(got.body + ' ', got.headers, hook.secret)).toThrow(/signature/);
      expect(() => verifyWebhook(got.body, got.headers, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).toThrow(/signature/);
      expect(() => verifyWebhook(got.body, got.headers, hook.secret, { now: new Date(Date.now() + 301_000 + (app.clock.now().getTime() - Date.now())) })).toThrow(/tolerance/);

      const rows = await eventually(async () => {
        const d = await deliveries(org, hook.id);
        return d.length === 1 ? d : null;
      });
      expect(rows[0]).toMatchObject({ attemptNumber: 1, success: true, statusCode: 200, responseBody: 'ok', eventId: body.id, idempotencyKey: got.headers['x-service-idempotency-key'] });
      expect(rows[0].payload).toEqual(body);
      const w = (await org.req({ method: 'GET', url: `/api/v1/webhooks/${hook.id}` })).json().data;
      expect(w).toMatchObject({ successCount: 1, failureCount: 0 });
      expect(w.lastSuccessAt).not.toBeNull();
    } finally {
      await rx.close();
    }
  });

  it('matches eventTypes and agentIds (null = every agent)', async ({ freshOrg: org }) => {
    const rx = await startReceiver();
    try {
      const a1 = await registerAgent(org);
      const a2 = await registerAgent(org);
      await createHook(org, rx, { eventTypes: ['agent_updated'], agentIds: [a2.id] });
      await org.req({ method: 'PATCH', url: `/api/v1/agents/${a1.id}`, payload: { description: 'one' } });
      await org.req({ method: 'PATCH', url: `/api/v1/agents/${a2.id}`, payload: { description: 'two' } });
      await registerAgent(org);
      const [got] = await rx.waitFor(1);
      expect(JSON.parse(got.body)).toMatchObject({ type: 'agent_updated', agentId: a2.id });
      await org.req({ method: 'PATCH', url: `/api/v1/agents/${a2.id}`, payload: { description: 'three' } });
      await rx.waitFor(2);
      expect(rx.received.map((r) => JSON.parse(r.body).agentId)).toEqual([a2.id, a2.id]);
    } finally {
      await rx.close();
    }
  });

  it('trace events are written once a webhook subscribes (the subscriptions cache is invalidated at once)', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    try {
      const agent = await registerAgent(org);
      const ingest = (traceId: string, status: string) => org.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: [{ traceId, agentUuid: agent.id, status }] } });
      expect((await ingest('t-before', 'error')).statusCode).toBe(202);
      expect(await app.container.services.webhooks.subscriptions.wants(org.orgId, 'trace_error')).toBe(false);
      await createHook(org, rx, { eventTypes: ['trace_error'] });
      expect(await app.container.services.webhooks.subscriptions.wants(org.orgId, 'trace_error')).toBe(true);
      expect((await ingest('t-ok', 'success')).statusCode).toBe(202);
      expect((await ingest('t-err', 'error')).statusCode).toBe(202);
      const [got] = await rx.waitFor(1);
      expect(JSON.parse(got.body)).toMatchObject({ type: 'trace_error', agentId: agent.id, data: { traceId: 't-err', status: 'error' } });
      expect(rx.received).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });

  it('keeps event order for one webhook', async ({ freshOrg: org }) => {
    const rx = await startReceiver();
    try {
      await createHook(org, rx);
      const names: string[] = [];
      for (let i = 0; i < 8; i++) names.push((await registerAgent(org)).agentId);
      const got = await rx.waitFor(8);
      expect(got.map((r) => JSON.parse(r.body).data.agent.agentId)).toEqual(names);
    } finally {
      await rx.close();
    }
  });

  it('retries a failing receiver with backoff: attempts 1..3, one idempotency key', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push({ status: 500 }, { status: 503 });
    try {
      const hook = await createHook(org, rx, { retryBackoffSeconds: 10 });
      await registerAgent(org);
      await rx.waitFor(1);
      const firstRetryAt = await eventually(async () => (await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id)))[0]?.attempts === 1 && (await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id)))[0]);
      const waitS = (firstRetryAt.nextAttemptAt.getTime() - app.clock.now().getTime()) / 1000;
      expect(waitS).toBeGreaterThanOrEqual(10);
      expect(waitS).toBeLessThanOrEqual(12);
      app.clock.advance(12_100);
      await rx.waitFor(2);
      const second = await eventually(async () => {
        const [m] = await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id));
        return m.attempts === 2 && m;
      });
      // Attempt 2 failed: the next wait doubles (20 s, up to 24 s with jitter).
      const wait2 = (second.nextAttemptAt.getTime() - app.clock.now().getTime()) / 1000;
      expect(wait2).toBeGreaterThanOrEqual(20);
      expect(wait2).toBeLessThanOrEqual(24);
      app.clock.advance(24_100);
      const got = await rx.waitFor(3);
      expect(new Set(got.map((r) => r.headers['x-service-idempotency-key'])).size).toBe(1);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
      const rows = await eventually(async () => {
        const d = await deliveries(org, hook.id);
        return d.length === 3 ? d : null;
      });
      expect(rows.map((d) => [d.attemptNumber, d.success, d.statusCode])).toEqual([
        [3, true, 200],
        [2, false, 503],
        [1, false, 500],
      ]);
      const w = (await org.req({ method: 'GET', url: `/api/v1/webhooks/${hook.id}` })).json().data;
      expect(w).toMatchObject({ successCount: 1, failureCount: 2, lastFailureReason: 'HTTP 503 Service Unavailable' });
    } finally {
      await rx.close();
    }
  });

  it('stops after maxRetries: the event stays visible as failed and can be redelivered with the same key', async ({ freshOrg: org }) => {
    const rx = await startReceiver({ status: 500 });
    try {
      const hook = await createHook(org, rx, { maxRetries: 0 });
      await registerAgent(org);
      await rx.waitFor(1);
      const [failed] = await eventually(async () => {
        const d = await deliveries(org, hook.id);
        return d.length === 1 ? d : null;
      });
      expect(failed).toMatchObject({ attemptNumber: 1, success: false, statusCode: 500 });
      rx.fallback = { status: 204 };
      const r = await org.req({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/redeliver` });
      expect(r.statusCode, r.body).toBe(202);
      expect(r.json().data).toMatchObject({ eventId: failed.eventId, idempotencyKey: failed.idempotencyKey, series: 2, status: 'pending' });
      const got = await rx.waitFor(2);
      expect(got[1].headers['x-service-idempotency-key']).toBe(failed.idempotencyKey);
      expect(got[1].headers['webhook-id']).toBe(failed.eventId);
      expect(got[1].body).toBe(got[0].body);
      const rows = await eventually(async () => {
        const d = await deliveries(org, hook.id);
        return d.length === 2 ? d : null;
      });
      expect(rows[0]).toMatchObject({ attemptNumber: 1, success: true, statusCode: 204, eventId: failed.eventId });
    } finally {
      await rx.close();
    }
  });

  it('410 Gone disables the webhook and stops retrying', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver({ status: 410 });
    try {
      const hook = await createHook(org, rx);
      await registerAgent(org);
      await rx.waitFor(1);
      const w = await eventually(async () => {
        const row = await hookRow(app, org.orgId, hook.id);
        return !row.isActive && row;
      });
      expect(w.lastFailureReason).toMatch(/410/);
      const audit = (await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceId=${hook.id}&action=webhook.disable` })).json().data;
      expect(audit).toHaveLength(1);
      expect(audit[0].metadata.reason).toMatch(/410/);
      const [m] = await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id));
      expect(m.status).toBe('failed');
      app.clock.advance(3600_000);
      await registerAgent(org);
      // Nothing else reaches it: the next event is dispatched to no webhook.
      await eventually(async () => (await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.organizationId, org.orgId))).length === 1 && (await runner.runOnce()) >= 0);
      expect(rx.received).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });

  it('429 honours Retry-After', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push({ status: 429, headers: { 'Retry-After': '120' } });
    try {
      const hook = await createHook(org, rx);
      await registerAgent(org);
      await rx.waitFor(1);
      const m = await eventually(async () => {
        const [row] = await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id));
        return row?.attempts === 1 && row;
      });
      expect(m.nextAttemptAt.getTime() - app.clock.now().getTime()).toBe(120_000);
      app.clock.advance(120_000);
      await rx.waitFor(2);
    } finally {
      await rx.close();
    }
  });

  it('a redirect is a failure and is not followed', async ({ freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push({ status: 302, headers: { Location: '/elsewhere' } });
    try {
      const hook = await createHook(org, rx);
      await registerAgent(org);
      await rx.waitFor(1);
      const [d] = await eventually(async () => {
        const rows = await deliveries(org, hook.id);
        return rows.length === 1 ? rows : null;
      });
      expect(d).toMatchObject({ success: false, statusCode: 302 });
      expect(d.errorMessage).toMatch(/redirect/);
      expect(rx.received).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });

  it('a hanging receiver times out; a huge answer is cut at 4 KiB', async ({ freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push('hang', { status: 200, body: 'x'.repeat(5 * 1024 * 1024) });
    try {
      const hook = await createHook(org, rx, { timeoutSeconds: 1 });
      await registerAgent(org);
      const [d] = await eventually(async () => {
        const rows = await deliveries(org, hook.id);
        return rows.length === 1 ? rows : null;
      });
      expect(d).toMatchObject({ success: false, statusCode: null });
      expect(d.errorMessage).toMatch(/^timeout: /);
      // The test route meets the huge answer.
      const t = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/test` })).json().data;
      expect(t).toMatchObject({ success: true, statusCode: 200 });
    } finally {
      await rx.close();
    }
  });

  it('the test route reports the status, or why there was none (refused, TLS)', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push({ status: 418 });
    try {
      const hook = await createHook(org, rx);
      const r1 = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/test` })).json().data;
      expect(r1).toMatchObject({ success: false, statusCode: 418, errorKind: 'http_status' });
      const r2 = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/test` })).json().data;
      expect(r2).toMatchObject({ success: true, statusCode: 200, statusText: 'OK' });
      const sent = rx.received[1];
      expect(JSON.parse(sent.body)).toMatchObject({ type: 'test', organizationId: org.orgId });
      expect(verifyWebhook(sent.body, sent.headers, hook.secret, { now: app.clock.now() }).scheme).toBe('x-service-v2');

      const tls = await createHook(org, `https://127.0.0.1:${rx.port}/hook`);
      const r3 = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${tls.id}/test` })).json().data;
      expect(r3).toMatchObject({ success: false, statusCode: 0, errorKind: 'tls' });
    } finally {
      await rx.close();
    }
    const gone = (await org.req({ method: 'GET', url: '/api/v1/webhooks' })).json().data[0].id;
    const r4 = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${gone}/test` })).json().data;
    expect(r4).toMatchObject({ success: false, statusCode: 0, errorKind: 'refused' });
  });

  it('signs with the old and the new secret during the rotation grace, then only the new one', async ({ app, freshOrg: org }) => {
    // Signatures carry the clock's time and the public library checks it against the real one.
    app.clock.set(Date.now());
    const rx = await startReceiver();
    try {
      const hook = await createHook(org, rx);
      const rotated = (await org.req({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret` })).json().data.secret as string;
      await registerAgent(org);
      const [got] = await rx.waitFor(1);
      expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(String(got.headers['x-service-signature']).split(' ')).toHaveLength(2);
      // A receiver still on the old secret, and one already on the new, both verify.
      expect(new StandardWebhook(hook.secret).verify(got.body, got.headers as Record<string, string>)).toBeTruthy();
      expect(new StandardWebhook(rotated).verify(got.body, got.headers as Record<string, string>)).toBeTruthy();
      expect(verifyWebhook(got.body, got.headers, hook.secret).scheme).toBe('x-service-v2');
      expect(verifyWebhook(got.body, got.headers, rotated).scheme).toBe('x-service-v2');

      app.clock.advance(86_400_000 + 1000);
      await registerAgent(org);
      const [, later] = await rx.waitFor(2);
      const now = app.clock.now();
      expect(String(later.headers['x-service-signature']).split(' ')).toHaveLength(1);
      expect(verifyWebhook(later.body, later.headers, rotated, { now }).scheme).toBe('x-service-v2');
      expect(() => verifyWebhook(later.body, later.headers, hook.secret, { now })).toThrow(/signature/);
    } finally {
      await rx.close();
    }
  });

  it('disables a webhook whose every attempt failed for 5 days', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver({ status: 500 });
    try {
      const hook = await createHook(org, rx, { maxRetries: 10, retryBackoffSeconds: 3600 });
      await registerAgent(org);
      await rx.waitFor(1);
      await eventually(async () => (await hookRow(app, org.orgId, hook.id)).failureCount === 1);
      app.clock.advance(2 * 86_400_000);
      await rx.waitFor(2);
      await eventually(async () => (await hookRow(app, org.orgId, hook.id)).failureCount === 2);
      expect((await hookRow(app, org.orgId, hook.id)).isActive).toBe(true);
      app.clock.advance(3 * 86_400_000);
      await rx.waitFor(3);
      const w = await eventually(async () => {
        const row = await hookRow(app, org.orgId, hook.id);
        return !row.isActive && row;
      });
      expect(w.lastFailureReason).toMatch(/5 days/);
      // Re-activating resumes, with a fresh failure streak.
      const r = await org.req({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, payload: { isActive: true } });
      expect(r.json().data.isActive).toBe(true);
      expect((await hookRow(app, org.orgId, hook.id)).failingSince).toBeNull();
    } finally {
      await rx.close();
    }
  });

  it('a delivery in flight when the worker stops is sent again by the next one, with the same key', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push('hang');
    await runner.stop(1000);
    const first = await startRunner(app, 'first');
    try {
      const hook = await createHook(org, rx, { timeoutSeconds: 30 });
      await registerAgent(org);
      await rx.waitFor(1);
      // The worker dies with the request in flight: its claims go back to the queue.
      await first.stop(50);
      runner = await startRunner(app, 'second');
      // The lane's lease (timeout + 30 s) must end before another worker may send. It runs on the
      // database's clock, so the test ends it there; the job waiting for its end is due on the app's.
      await app.database.db.update(webhooks).set({ laneUntil: sql`now() - interval '1 second'` }).where(and(eq(webhooks.organizationId, org.orgId), eq(webhooks.id, hook.id)));
      app.clock.advance(61_000);
      const got = await rx.waitFor(2);
      expect(got[1].headers['x-service-idempotency-key']).toBe(got[0].headers['x-service-idempotency-key']);
      expect(got[1].headers['webhook-id']).toBe(got[0].headers['webhook-id']);
      await eventually(async () => (await deliveries(org, hook.id)).length === 1);
      // The first worker's late answer records nothing: it lost the lane.
      rx.releaseHanging();
      await new Promise((r) => setTimeout(r, 200));
      const rows = await deliveries(org, hook.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ attemptNumber: 1, success: true });
    } finally {
      await rx.close();
    }
  });

  it('an instance whose clock is hours ahead does not take a held lane (leases on the database clock)', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push('hang');
    try {
      const hook = await createHook(org, rx, { timeoutSeconds: 30 });
      await registerAgent(org);
      await rx.waitFor(1);
      // A second dispatcher on the same database, its injected clock three hours ahead.
      await otherDispatcher(app, 3 * 3600_000).deliver(org.orgId, hook.id);
      await new Promise((r) => setTimeout(r, 100));
      expect(rx.received).toHaveLength(1);
      rx.releaseHanging();
      const rows = await eventually(async () => {
        const d = await deliveries(org, hook.id);
        return d.length === 1 ? d : null;
      });
      expect(rows[0]).toMatchObject({ attemptNumber: 1, success: true });
      expect(rx.received).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });

  it('a database error mid-turn releases the lane: the next turn takes it at once', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    rx.replies.push({ status: 500 });
    try {
      const hook = await createHook(org, rx, { retryBackoffSeconds: 3600 });
      await registerAgent(org);
      await rx.waitFor(1);
      await eventually(async () => (await app.database.db.select().from(webhookMessages).where(eq(webhookMessages.webhookId, hook.id)))[0]?.attempts === 1);
      // An instance two hours ahead (the retry, 1 to 1.2 h away, is due for it, not yet for the file's runner) whose next query fails once.
      let failures = 1;
      const db = app.database.db;
      const flaky = new Proxy(db, {
        get(target, prop) {
          if (prop === 'select' && failures > 0) {
            failures--;
            return () => {
              throw new Error('connection reset');
            };
          }
          const v = Reflect.get(target, prop, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      const dispatcher = otherDispatcher(app, 2 * 3600_000, flaky);
      await expect(dispatcher.deliver(org.orgId, hook.id)).rejects.toThrow(/connection reset/);
      expect(await hookRow(app, org.orgId, hook.id)).toMatchObject({ laneOwner: null, laneUntil: null });
      await dispatcher.deliver(org.orgId, hook.id);
      await rx.waitFor(2);
      await eventually(async () => (await deliveries(org, hook.id)).length === 2);
    } finally {
      await rx.close();
    }
  });

  it('v1 signatures when WEBHOOK_SIGNATURE_VERSION=v1', async ({ app }) => {
    // On PostgreSQL both apps share the file's database: only the v1 app's worker may run meanwhile.
    await runner.stop(1000);
    await withTestApp({ WEBHOOK_SIGNATURE_VERSION: 'v1' }, async (t, org) => {
      const r = await startRunner(t);
      const rx = await startReceiver();
      try {
        const hook = await createHook(org, rx);
        await registerAgent(org);
        const [got] = await rx.waitFor(1);
        expect(got.headers['x-service-signature-version']).toBe('v1');
        expect(got.headers['x-service-timestamp']).toBeUndefined();
        expect(verifyWebhook(got.body, got.headers, hook.secret).scheme).toBe('x-service-v1');
        expect(new StandardWebhook(hook.secret).verify(got.body, got.headers as Record<string, string>)).toBeTruthy();
      } finally {
        await rx.close();
        await r.stop(1000);
      }
    });
    runner = await startRunner(app);
  });
});

describe('retention', () => {
  it('deletes finished messages and their attempts older than WEBHOOK_RETENTION_DAYS (30), never a pending one', async ({ app, freshOrg: org }) => {
    // Driven by hand on the app's clock: the file's runner is stopped meanwhile.
    await runner.stop(1000);
    const ok = await startReceiver();
    const bad = await startReceiver({ status: 500 });
    const { delivery, deleteExpiredHistory } = app.container.services.webhooks;
    const hooks = [await createHook(org, ok), await createHook(org, bad, { maxRetries: 0 }), await createHook(org, bad, { maxRetries: 10, retryBackoffSeconds: 60 })];
    const [succeeding, failing, retrying] = hooks;
    const deliverTo = async (targets: typeof hooks) => {
      await delivery.dispatch();
      for (const h of targets) await delivery.deliver(org.orgId, h.id);
    };
    const messages = async (id: string) => (await app.database.db.select().from(webhookMessages).where(and(eq(webhookMessages.organizationId, org.orgId), eq(webhookMessages.webhookId, id)))).map((m) => m.status).sort();
    try {
      await registerAgent(org);
      await deliverTo(hooks);
      // Four days later (under the 5 days of failures that disable a webhook), a second event.
      app.clock.advance(4 * 86_400_000);
      await registerAgent(org);
      // The retrying webhook's lane does not run again: its first message stays pending since its first attempt.
      await deliverTo([succeeding, failing]);
      expect(await messages(succeeding.id)).toEqual(['succeeded', 'succeeded']);
      expect(await messages(failing.id)).toEqual(['failed', 'failed']);
      expect(await messages(retrying.id)).toEqual(['pending', 'pending']);
      expect(await deliveries(org, retrying.id)).toHaveLength(1);

      // 31 days after the first event, 27 after the second: the first event's finished history expires.
      app.clock.advance(27 * 86_400_000);
      // WEBHOOK_RETENTION_DAYS=0 keeps everything.
      const keepAll = assemble({ config: { ...app.container.config, WEBHOOK_RETENTION_DAYS: 0 }, database: app.database, state: app.state, clock: app.clock });
      expect(await keepAll.services.webhooks.deleteExpiredHistory()).toEqual({ deleted: 0, more: false });
      expect(await messages(succeeding.id)).toEqual(['succeeded', 'succeeded']);
      expect(await deleteExpiredHistory({ batchSize: 1, maxBatches: 1 })).toMatchObject({ more: true });
      expect(await deleteExpiredHistory()).toMatchObject({ more: false });
      // Nothing expired is left: a run spends no statement on webhooks without expired history, so a
      // capped run is not stuck on the first webhooks (the late ones would never be reached).
      expect(await deleteExpiredHistory({ maxBatches: 1 })).toEqual({ deleted: 0, more: false });
      expect(await messages(succeeding.id)).toEqual(['succeeded']);
      expect(await messages(failing.id)).toEqual(['failed']);
      const kept = await deliveries(org, succeeding.id);
      expect(kept).toHaveLength(1);
      expect(Date.parse(kept[0].createdAt)).toBe(app.clock.now().getTime() - 27 * 86_400_000);
      expect(await deliveries(org, failing.id)).toHaveLength(1);
      // Still to be delivered: kept, with its attempt, however old.
      expect(await messages(retrying.id)).toEqual(['pending', 'pending']);
      expect(await deliveries(org, retrying.id)).toHaveLength(1);
    } finally {
      await ok.close();
      await bad.close();
      runner = await startRunner(app);
    }
  });

  it('the cutoff is that many days back; none when WEBHOOK_RETENTION_DAYS is 0', () => {
    expect(retentionCutoff(0, new Date())).toBeNull();
    expect(retentionCutoff(30, new Date('2026-03-31T00:00:00Z'))).toEqual(new Date('2026-03-01T00:00:00Z'));
  });
});

describe.skipIf(!process.env.DATABASE_URL)('two workers on PostgreSQL', () => {
  it('never send the same attempt twice', async ({ app, freshOrg: org }) => {
    const other = await createTestApp();
    // The test clocks are frozen: a job that finds a lane held is scheduled for when its lease ends
    // on its instance's clock, which a frozen clock hours away would never reach. Two instances
    // whose clocks differ are covered by "an instance whose clock is hours ahead does not take a held lane" above.
    other.clock.set(app.clock.now());
    const second = await startRunner(other, 'pg-second');
    const rx = await startReceiver();
    try {
      await createHook(org, rx);
      await createHook(org, rx);
      for (let i = 0; i < 20; i++) await registerAgent(org);
      await rx.waitFor(40);
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.received).toHaveLength(40);
      const keys = rx.received.map((r) => `${r.headers['webhook-id']}|${r.headers['x-service-signature']}`);
      expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(20);
      expect(new Set(keys).size).toBe(40);
    } finally {
      await rx.close();
      await second.stop(1000);
      await other.close();
    }
  });
});
