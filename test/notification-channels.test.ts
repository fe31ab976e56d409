/**
 * Notification channels (docs/decisions.md, "Notification channels"): CRUD with per-type
 * configuration, masked secrets, roles and organizations; delivery through the job runner (driven by
 * runOnce on the test clock) to a real local SMTP server and to local HTTP receivers posing as
 * Slack, PagerDuty and a generic webhook (verified with the `standardwebhooks` package); retries;
 * and test results for unreachable, slow and TLS-failing targets.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { Webhook } from 'standardwebhooks';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../src/db/client.js';
import { JobRunner, type JobLogger } from '../src/jobs/index.js';
import { registerModuleWork } from '../src/jobs/process.js';
import { notify, type NotificationMessage } from '../src/domains/notification-channels/index.js';
import { verifyWebhook } from '../src/webhooks-verify.js';
import { createKey, createOrg, createTestApp, signJwt, withTestApp, type TestApp, type TestOrg } from './helpers.js';

const BASE = '/api/v1/notification-channels';
const quiet: JobLogger = { info: () => {}, warn: () => {}, error: () => {} };
const HOUR_MS = 3_600_000;
const ROUTING_KEY = 'R0123456789abcdefABCDEF012345678';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
interface Mail {
  from: string;
  to: string[];
  raw: string;
}

/** What a path of the receiver answers; default 200 "ok". */
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

let t: TestApp;
let org: TestOrg;
let receiver: http.Server;
let base: string;
let closedPort: number;
let smtp: SMTPServer;
const received: Received[] = [];
const mails: Mail[] = [];
const handlers = new Map<string, Handler>();

const start = async (s: http.Server | SMTPServer['server']) => {
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  return (s.address() as AddressInfo).port;
};

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body });
      const h = handlers.get(path);
      if (h) h(req, res, body);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  base = `http://127.0.0.1:${await start(receiver)}`;

  const gone = http.createServer();
  closedPort = await start(gone);
  gone.close();

  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, cb) {
      if (address.address.startsWith('bounce@')) return cb(Object.assign(new Error('no such user'), { responseCode: 550 }));
      cb();
    },
    onData(stream, session, cb) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      stream.on('end', () => {
        mails.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((a) => a.address), raw });
        cb();
      });
    },
  });
  const smtpPort = await start(smtp.server);

  t = await createTestApp({
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    SMTP_FROM: 'Alerts <alerts@agov.test>',
    PAGERDUTY_EVENTS_URL: `${base}/pd/v2/enqueue`,
    NOTIFICATION_TIMEOUT_MS: '500',
  });
  org = await createOrg(t, 'Channels');
});

afterAll(async () => {
  await t?.close();
  receiver?.closeAllConnections();
  receiver?.close();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
});

/** Creates a channel through the API and answers the create response's data. */
async function create(o: TestOrg, body: Record<string, unknown>, key?: string) {
  const res = await o.req({ method: 'POST', url: BASE, payload: body, key });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; configuration: Record<string, unknown>; channelType: string; isActive: boolean };
}

const get = async (id: string, o = org) => {
  const res = await o.req({ method: 'GET', url: `${BASE}/${id}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
};

/** Runs every due job once, on a runner with every module's job types, at the app's clock. */
async function runJobs() {
  const runner = new JobRunner({ db: t.database.db, log: quiet, clock: t.clock });
  registerModuleWork(runner, t.container.services);
  return runner.runOnce();
}

const msg = (over: Partial<NotificationMessage> = {}): NotificationMessage => ({
  dedupKey: `alert-${randomUUID()}`,
  title: 'Error rate above 5%',
  body: 'Agent <checkout> errs on 7% of traces & rising',
  severity: 'critical',
  action: 'trigger',
  link: 'https://agov.test/alerts/1',
  ...over,
});

const at = (path: string) => received.filter((r) => r.path === path);

describe('CRUD', () => {
  it('creates, reads, lists, updates and deletes a channel, auditing each change', async () => {
    const c = await create(org, { name: 'ops mail', channelType: 'email', configuration: { recipients: ['ops@example.com', 'oncall@example.com'] }, description: 'the ops list' });
    expect(c).toMatchObject({ channelType: 'email', isActive: true, configuration: { recipients: ['ops@example.com', 'oncall@example.com'] } });
    const read = await get(c.id);
    expect(read).toMatchObject({ id: c.id, organizationId: org.orgId, name: 'ops mail', description: 'the ops list', lastDeliveryAt: null, lastFailureAt: null, lastFailureReason: null });

    const list = await org.req({ method: 'GET', url: `${BASE}?channelType=email&isActive=true` });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((x: { id: string }) => x.id)).toContain(c.id);

    const patched = await org.req({ method: 'PATCH', url: `${BASE}/${c.id}`, payload: { name: 'ops', isActive: false } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().data).toMatchObject({ name: 'ops', isActive: false });
    const inactive = await org.req({ method: 'GET', url: `${BASE}?isActive=false` });
    expect(inactive.json().data.map((x: { id: string }) => x.id)).toContain(c.id);

    const del = await org.req({ method: 'DELETE', url: `${BASE}/${c.id}` });
    expect(del.statusCode).toBe(204);
    expect((await org.req({ method: 'GET', url: `${BASE}/${c.id}` })).statusCode).toBe(404);

    const audit = await org.req({ method: 'GET', url: `/api/v1/audit-logs?resourceId=${c.id}` });
    expect(audit.json().data.map((e: { action: string }) => e.action).sort()).toEqual(['notification_channel.create', 'notification_channel.delete', 'notification_channel.update']);
  });

  it('changing channelType needs a configuration for the new type', async () => {
    const c = await create(org, { name: 'm', channelType: 'email', configuration: { recipients: ['a@example.com'] } });
    const bare = await org.req({ method: 'PATCH', url: `${BASE}/${c.id}`, payload: { channelType: 'pagerduty' } });
    expect(bare.statusCode).toBe(422);
    expect(bare.json().error.fields).toHaveProperty('configuration');
    const ok = await org.req({ method: 'PATCH', url: `${BASE}/${c.id}`, payload: { channelType: 'pagerduty', configuration: { routing_key: ROUTING_KEY } } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().data).toMatchObject({ channelType: 'pagerduty', configuration: { routing_key: '…5678' } });
  });
});

describe('validation', () => {
  const bad = async (channelType: string, configuration: unknown) => {
    const res = await org.req({ method: 'POST', url: BASE, payload: { name: 'x', channelType, configuration } });
    expect(res.statusCode, res.body).toBe(422);
    return res.json().error.fields as Record<string, string>;
  };

  it('names the failing configuration field per type', async () => {
    expect(await bad('email', { recipients: ['not-an-email'] })).toHaveProperty(['configuration.recipients.0']);
    expect(await bad('email', { recipients: [] })).toHaveProperty(['configuration.recipients']);
    expect(await bad('email', { recipients: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) })).toHaveProperty(['configuration.recipients']);
    expect(await bad('slack', { webhookUrl: 'http://hooks.slack.com/services/T0/B0/abc' })).toEqual({ 'configuration.webhookUrl': 'must use https' });
    expect(await bad('slack', { webhookUrl: 'ftp://hooks.slack.com/x' })).toHaveProperty(['configuration.webhookUrl']);
    expect(await bad('pagerduty', { routing_key: 'short' })).toHaveProperty(['configuration.routing_key']);
    expect(await bad('pagerduty', { routing_key: `${ROUTING_KEY}x` })).toHaveProperty(['configuration.routing_key']);
    expect(await bad('webhook', { url: 'not a url' })).toHaveProperty(['configuration.url']);
    expect(await bad('webhook', { url: `${base}/h`, secret: 'plain' })).toHaveProperty(['configuration.secret']);
    expect(await bad('webhook', { url: 'https://user:pw@example.com/h' })).toHaveProperty(['configuration.url']);
  });

  it('refuses unknown configuration fields and unknown types', async () => {
    expect(await bad('email', { recipients: ['a@example.com'], cc: ['b@example.com'] })).toEqual({ 'configuration.cc': 'is not a known field' });
    expect(await bad('pagerduty', { routing_key: ROUTING_KEY, routingKey: ROUTING_KEY })).toEqual({ 'configuration.routingKey': 'is not a known field' });
    const res = await org.req({ method: 'POST', url: BASE, payload: { name: 'x', channelType: 'sms', configuration: {} } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields).toHaveProperty('channelType');
  });

  it('refuses private targets when private targets are not allowed', async () => {
    await withTestApp({ ALLOW_PRIVATE_TARGETS: 'false' }, async (_t, o) => {
      for (const [channelType, configuration, field] of [
        ['webhook', { url: 'http://127.0.0.1:9/h' }, 'configuration.url'],
        ['webhook', { url: 'http://169.254.169.254/latest' }, 'configuration.url'],
        ['slack', { webhookUrl: 'https://localhost/services/x' }, 'configuration.webhookUrl'],
        ['slack', { webhookUrl: 'http://127.0.0.1/services/x' }, 'configuration.webhookUrl'],
      ] as const) {
        const res = await o.req({ method: 'POST', url: BASE, payload: { name: 'x', channelType, configuration } });
        expect(res.statusCode, `${channelType} ${JSON.stringify(configuration)}`).toBe(422);
        expect(res.json().error.fields).toHaveProperty([field]);
      }
      const ok = await o.req({ method: 'POST', url: BASE, payload: { name: 'x', channelType: 'slack', configuration: { webhookUrl: 'https://hooks.slack.com/services/T0/B0/abcd' } } });
      expect(ok.statusCode, ok.body).toBe(201);
    });
  });
});

describe('secrets', () => {
  it('shows them in full only in the create response, masked on get, list and in the audit log', async () => {
    const slackUrl = `${base}/slack/T000/B000/XXXXsecretPATH`;
    const slack = await create(org, { name: 's', channelType: 'slack', configuration: { webhookUrl: slackUrl } });
    expect(slack.configuration).toEqual({ webhookUrl: slackUrl });
    const hook = await create(org, { name: 'w', channelType: 'webhook', configuration: { url: `${base}/hook` } });
    const secret = hook.configuration.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const pd = await create(org, { name: 'p', channelType: 'pagerduty', configuration: { routing_key: ROUTING_KEY } });
    expect(pd.configuration).toEqual({ routing_key: ROUTING_KEY });

    expect((await get(slack.id)).configuration).toEqual({ webhookUrl: `${base}/…PATH` });
    expect((await get(hook.id)).configuration).toEqual({ url: `${base}/hook`, secret: `whsec_…${secret.slice(-4)}` });
    expect((await get(pd.id)).configuration).toEqual({ routing_key: '…5678' });

    const list = await org.req({ method: 'GET', url: `${BASE}?limit=100` });
    const text = list.body;
    for (const s of [slackUrl, secret, ROUTING_KEY]) expect(text).not.toContain(s);
    const audit = await org.req({ method: 'GET', url: '/api/v1/audit-logs?resourceType=notification_channel&limit=100' });
    for (const s of [slackUrl, secret, ROUTING_KEY]) expect(audit.body).not.toContain(s);
  });

  it('PATCH with a masked secret keeps the stored one; a new secret replaces it', async () => {
    const path = `/pd-keep/${randomUUID()}`;
    const pd = await create(org, { name: 'p', channelType: 'pagerduty', configuration: { routing_key: ROUTING_KEY } });
    const read = await get(pd.id);
    const same = await org.req({ method: 'PATCH', url: `${BASE}/${pd.id}`, payload: { configuration: read.configuration } });
    expect(same.statusCode, same.body).toBe(200);
    expect(same.json().data.updatedAt).toBe(read.updatedAt); // nothing changed, nothing written

    const hook = await create(org, { name: 'w', channelType: 'webhook', configuration: { url: `${base}/old` } });
    const secret = hook.configuration.secret as string;
    const masked = (await get(hook.id)).configuration;
    const moved = await org.req({ method: 'PATCH', url: `${BASE}/${hook.id}`, payload: { configuration: { ...masked, url: `${base}${path}` } } });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().data.configuration).toEqual({ url: `${base}${path}`, secret: masked.secret });
    // Without `secret` the stored one stays too.
    const noSecret = await org.req({ method: 'PATCH', url: `${BASE}/${hook.id}`, payload: { configuration: { url: `${base}${path}` } } });
    expect(noSecret.json().data.configuration.secret).toBe(masked.secret);

    // The delivery is still signed with the original secret.
    await notify(t.database.db, org.orgId, hook.id, msg(), { now: t.clock.now() });
    await runJobs();
    const [got] = at(path);
    expect(got).toBeDefined();
    expect(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).not.toThrow();

    const rotated = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    const r = await org.req({ method: 'PATCH', url: `${BASE}/${hook.id}`, payload: { configuration: { url: `${base}${path}`, secret: rotated } } });
    expect(r.json().data.configuration.secret).toBe(`whsec_…${rotated.slice(-4)}`);
  });
});

describe('access', () => {
  it('needs role admin (and scope admin) for reads and changes alike', async () => {
    const c = await create(org, { name: 'm', channelType: 'email', configuration: { recipients: ['a@example.com'] } });
    const dev = await createKey(org, { name: 'dev', scopes: ['agent:read', 'agent:write', 'policy:write'] });
    for (const [method, url] of [['GET', BASE], ['GET', `${BASE}/${c.id}`], ['POST', `${BASE}/${c.id}/test`], ['DELETE', `${BASE}/${c.id}`]] as const) {
      expect((await org.req({ method, url, key: dev.key })).statusCode, `${method} ${url}`).toBe(403);
    }
    const viewer = await signJwt({ sub: `u-${randomUUID()}`, org_id: org.orgId, role: 'viewer' });
    const asViewer = await t.app.inject({ method: 'GET', url: BASE, headers: { authorization: `Bearer ${viewer}` } });
    expect(asViewer.statusCode).toBe(403);
    const adminUser = await signJwt({ sub: `u-${randomUUID()}`, org_id: org.orgId, role: 'admin' });
    const asAdmin = await t.app.inject({ method: 'GET', url: BASE, headers: { authorization: `Bearer ${adminUser}` } });
    expect(asAdmin.statusCode).toBe(200);
  });

  it("answers 404 for another organization's channel", async () => {
    const c = await create(org, { name: 'm', channelType: 'email', configuration: { recipients: ['a@example.com'] } });
    const other = await createOrg(t, 'Other');
    expect((await other.req({ method: 'GET', url: `${BASE}/${c.id}` })).statusCode).toBe(404);
    expect((await other.req({ method: 'PATCH', url: `${BASE}/${c.id}`, payload: { name: 'x' } })).statusCode).toBe(404);
    expect((await other.req({ method: 'POST', url: `${BASE}/${c.id}/test` })).statusCode).toBe(404);
    expect((await other.req({ method: 'DELETE', url: `${BASE}/${c.id}` })).statusCode).toBe(404);
    expect((await other.req({ method: 'GET', url: BASE })).json().data.map((x: { id: string }) => x.id)).not.toContain(c.id);
    // notify skips it too: the channel is not the other organization's.
    expect(await notify(t.database.db, other.orgId, c.id, msg())).toEqual({ enqueued: [], skipped: [c.id] });
    expect((await org.req({ method: 'GET', url: `${BASE}/not-a-uuid` })).statusCode).toBe(404);
  });
});

describe('delivery through the job runner', () => {
  it('emails every recipient through the SMTP server', async () => {
    const c = await create(org, { name: 'mail', channelType: 'email', configuration: { recipients: ['ops@example.com', 'cto@example.com'] } });
    const m = msg({ title: `Budget exceeded ${randomUUID().slice(0, 8)}` });
    const queued = await notify(t.database.db, org.orgId, [c.id], m, { now: t.clock.now() });
    expect(queued).toEqual({ enqueued: [c.id], skipped: [] });
    await runJobs();
    const mail = mails.find((x) => x.raw.includes(m.title));
    expect(mail).toBeDefined();
    expect(mail!.to.sort()).toEqual(['cto@example.com', 'ops@example.com']);
    expect(mail!.from).toBe('alerts@agov.test');
    expect(mail!.raw).toMatch(new RegExp(`^Subject: \\[CRITICAL\\] ${m.title}`, 'm'));
    expect(mail!.raw).toContain('https://agov.test/alerts/1');
    expect((await get(c.id)).lastDeliveryAt).toBe(t.clock.now().toISOString());
  });

  it('a refused recipient (SMTP 550) is recorded and not retried', async () => {
    const c = await create(org, { name: 'bounce', channelType: 'email', configuration: { recipients: ['bounce@example.com'] } });
    await notify(t.database.db, org.orgId, c.id, msg(), { now: t.clock.now() });
    await runJobs();
    const read = await get(c.id);
    expect(read.lastFailureReason).toMatch(/^smtp: SMTP delivery failed \(.*550\)$/);
    const left = await t.database.db.execute(sql`select status from jobs where type = 'notification.deliver' and payload->>'channelId' = ${c.id}`);
    expect(rowsOf(left)).toHaveLength(0); // completed: nothing to retry
  });

  it('posts a Slack incoming-webhook payload with text and blocks', async () => {
    const path = `/slack/${randomUUID()}`;
    const c = await create(org, { name: 'slack', channelType: 'slack', configuration: { webhookUrl: `${base}${path}` } });
    await notify(t.database.db, org.orgId, c.id, msg({ agentId: randomUUID() }), { now: t.clock.now() });
    await runJobs();
    const [got] = at(path);
    expect(got.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got.body);
    expect(body.text).toBe('CRITICAL: Error rate above 5%');
    expect(body.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'CRITICAL: Error rate above 5%', emoji: true } });
    expect(body.blocks[1].text.text).toBe('Agent &lt;checkout&gt; errs on 7% of traces &amp; rising');
    expect(JSON.stringify(body.blocks)).toContain('*Severity:* critical');
    expect(body.blocks.at(-1)).toMatchObject({ type: 'actions', elements: [{ url: 'https://agov.test/alerts/1' }] });
  });

  it('triggers and then resolves a PagerDuty event with the same dedup_key', async () => {
    const c = await create(org, { name: 'pd', channelType: 'pagerduty', configuration: { routing_key: ROUTING_KEY } });
    const dedupKey = `alert-${randomUUID()}`;
    handlers.set('/pd/v2/enqueue', (_q, res) => res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"success"}'));
    await notify(t.database.db, org.orgId, c.id, msg({ dedupKey }), { now: t.clock.now() });
    await runJobs();
    await notify(t.database.db, org.orgId, c.id, msg({ dedupKey, action: 'resolve' }), { now: t.clock.now() });
    await runJobs();
    const events = at('/pd/v2/enqueue').map((r) => JSON.parse(r.body)).filter((b) => b.dedup_key === dedupKey);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ routing_key: ROUTING_KEY, event_action: 'trigger', dedup_key: dedupKey, payload: { summary: 'Error rate above 5%', severity: 'critical', source: 'agent-governance' }, links: [{ href: 'https://agov.test/alerts/1' }] });
    expect(events[1]).toEqual({ routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: dedupKey });
    handlers.delete('/pd/v2/enqueue');
  });

  it('signs a generic webhook as our webhooks do; standardwebhooks and X-Service-Signature verify it', async () => {
    const path = `/hook/${randomUUID()}`;
    const c = await create(org, { name: 'hook', channelType: 'webhook', configuration: { url: `${base}${path}` } });
    const secret = c.configuration.secret as string;
    const agentId = randomUUID();
    await notify(t.database.db, org.orgId, c.id, msg({ agentId, data: { rule: 'r1' } }), { now: t.clock.now() });
    await runJobs();
    const [got] = at(path);
    const payload = new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as Record<string, unknown>;
    expect(payload).toMatchObject({ type: 'notification', organizationId: org.orgId, agentId, createdAt: t.clock.now().toISOString(), data: { channelId: c.id, action: 'trigger', severity: 'critical', data: { rule: 'r1' } } });
    expect(got.headers['webhook-id']).toBe(payload.id);
    const ts = got.headers['x-service-timestamp'] as string;
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(got.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', key).update(`${ts}.${got.body}`).digest('hex')}`);
    expect(got.headers['x-service-signature-version']).toBe('v2');
    expect(got.headers['x-service-idempotency-key']).toMatch(/^[0-9a-f]{64}$/);
    expect(() => new Webhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(got.body, got.headers as Record<string, string>)).toThrow();
  });

  it("signs a channel webhook at the injected clock's time, with WEBHOOK_SIGNATURE_VERSION", async () => {
    const path = `/hook/${randomUUID()}`;
    const c = await create(org, { name: 'hook', channelType: 'webhook', configuration: { url: `${base}${path}` } });
    const secret = c.configuration.secret as string;
    // Hours away from the machine's clock: a signature made at the machine's time would fall outside the window.
    t.clock.advance(6 * HOUR_MS);
    try {
      expect((await org.req({ method: 'POST', url: `${BASE}/${c.id}/test` })).json().data).toEqual({ success: true, statusCode: 200 });
      const [got] = at(path);
      const now = t.clock.now();
      expect(got.headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
      expect(verifyWebhook(got.body, got.headers, secret, { now }).scheme).toBe('x-service-v2');
      expect(() => verifyWebhook(got.body, got.headers, secret, { now: new Date() })).toThrow(/tolerance/);
    } finally {
      t.clock.advance(-6 * HOUR_MS);
    }

    await withTestApp({ WEBHOOK_SIGNATURE_VERSION: 'v1' }, async (t2, o) => {
      const v1Path = `/hook/${randomUUID()}`;
      const res = await o.req({ method: 'POST', url: BASE, payload: { name: 'v1', channelType: 'webhook', configuration: { url: `${base}${v1Path}` } } });
      const { id, configuration } = res.json().data as { id: string; configuration: { secret: string } };
      expect((await o.req({ method: 'POST', url: `${BASE}/${id}/test` })).json().data).toEqual({ success: true, statusCode: 200 });
      const [got] = at(v1Path);
      expect(got.headers['x-service-signature-version']).toBe('v1');
      expect(got.headers['x-service-timestamp']).toBeUndefined();
      expect(verifyWebhook(got.body, got.headers, configuration.secret, { now: t2.clock.now() }).scheme).toBe('x-service-v1');
    });
  });

  it('retries after a 500 with the same id and body, then succeeds', async () => {
    const path = `/flaky/${randomUUID()}`;
    let calls = 0;
    handlers.set(path, (_q, res) => (++calls === 1 ? res.writeHead(500).end('boom') : res.writeHead(200).end('ok')));
    const c = await create(org, { name: 'flaky', channelType: 'webhook', configuration: { url: `${base}${path}` } });
    await notify(t.database.db, org.orgId, c.id, msg(), { now: t.clock.now() });
    await runJobs();
    expect(at(path)).toHaveLength(1);
    const failed = await get(c.id);
    expect(failed.lastFailureReason).toBe('http_status: the target answered 500');
    expect(failed.lastDeliveryAt).toBeNull();

    await runJobs(); // the retry is not due yet
    expect(at(path)).toHaveLength(1);
    t.clock.advance(HOUR_MS);
    await runJobs();
    const [first, second] = at(path);
    expect(second).toBeDefined();
    expect(second.body).toBe(first.body);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.headers['x-service-idempotency-key']).toBe(first.headers['x-service-idempotency-key']);
    expect((await get(c.id)).lastDeliveryAt).toBe(t.clock.now().toISOString());
    handlers.delete(path);
  });

  it('a 4xx from Slack is final; a repeat of a queued message is ignored; inactive channels get nothing', async () => {
    const path = `/slack-gone/${randomUUID()}`;
    handlers.set(path, (_q, res) => res.writeHead(404).end('no_service'));
    const c = await create(org, { name: 'gone', channelType: 'slack', configuration: { webhookUrl: `${base}${path}` } });
    const m = msg();
    const first = await notify(t.database.db, org.orgId, c.id, m, { now: t.clock.now() });
    const again = await notify(t.database.db, org.orgId, c.id, m, { now: t.clock.now() });
    expect(first.enqueued).toEqual([c.id]);
    expect(again).toEqual({ enqueued: [], skipped: [c.id] });
    await runJobs();
    t.clock.advance(HOUR_MS);
    await runJobs();
    expect(at(path)).toHaveLength(1);
    expect((await get(c.id)).lastFailureReason).toBe('http_status: the target answered 404');

    const off = await create(org, { name: 'off', channelType: 'slack', isActive: false, configuration: { webhookUrl: `${base}${path}` } });
    expect(await notify(t.database.db, org.orgId, [off.id, randomUUID()], msg())).toMatchObject({ enqueued: [] });
    handlers.delete(path);
  });

  it('enqueues in the caller\'s transaction: a rolled-back change delivers nothing', async () => {
    const path = `/rolled-back/${randomUUID()}`;
    const c = await create(org, { name: 'rb', channelType: 'slack', configuration: { webhookUrl: `${base}${path}` } });
    await expect(
      t.database.db.transaction(async (tx) => {
        expect((await notify(tx, org.orgId, c.id, msg(), { now: t.clock.now() })).enqueued).toEqual([c.id]);
        throw new Error('the alert change failed');
      }),
    ).rejects.toThrow('the alert change failed');
    await runJobs();
    expect(at(path)).toHaveLength(0);
  });

  it('refuses a malformed message', async () => {
    await expect(notify(t.database.db, org.orgId, [], { ...msg(), severity: 'fatal' } as unknown as NotificationMessage)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });
});

describe('POST /notification-channels/{id}/test', () => {
  const test = async (id: string) => {
    const res = await org.req({ method: 'POST', url: `${BASE}/${id}/test` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { success: boolean; statusCode?: number; error?: string };
  };
  const webhookTo = (url: string) => create(org, { name: 'target', channelType: 'webhook', configuration: { url } });

  it('reports success with the status code, for each type', async () => {
    expect(await test((await webhookTo(`${base}/test-ok`)).id)).toEqual({ success: true, statusCode: 200 });
    const slack = await create(org, { name: 's', channelType: 'slack', configuration: { webhookUrl: `${base}/test-slack` } });
    expect(await test(slack.id)).toEqual({ success: true, statusCode: 200 });
    const mail = await create(org, { name: 'm', channelType: 'email', configuration: { recipients: ['test@example.com'] } });
    expect(await test(mail.id)).toEqual({ success: true });
    expect(mails.some((m) => m.to.includes('test@example.com') && m.raw.includes('Test notification'))).toBe(true);
    // PagerDuty: trigger, then resolve the same dedup_key.
    const before = at('/pd/v2/enqueue').length;
    const pd = await create(org, { name: 'p', channelType: 'pagerduty', configuration: { routing_key: ROUTING_KEY } });
    expect(await test(pd.id)).toEqual({ success: true, statusCode: 200 });
    const [trigger, resolve] = at('/pd/v2/enqueue').slice(before).map((r) => JSON.parse(r.body));
    expect([trigger.event_action, resolve.event_action]).toEqual(['trigger', 'resolve']);
    expect(resolve.dedup_key).toBe(trigger.dedup_key);
  });

  it('reports failures as results: a status, refused, slow, TLS, redirect', async () => {
    handlers.set('/test-500', (_q, res) => res.writeHead(503).end());
    handlers.set('/test-slow', (_q, res) => setTimeout(() => res.writeHead(200).end('late'), 2_000).unref());
    handlers.set('/test-redirect', (_q, res) => res.writeHead(302, { location: '/test-ok' }).end());
    expect(await test((await webhookTo(`${base}/test-500`)).id)).toEqual({ success: false, statusCode: 503, error: 'http_status: the target answered 503' });
    expect(await test((await webhookTo(`http://127.0.0.1:${closedPort}/x`)).id)).toEqual({ success: false, error: 'refused: connection refused' });
    const slow = await test((await webhookTo(`${base}/test-slow`)).id);
    expect(slow).toMatchObject({ success: false, error: expect.stringMatching(/^timeout: /) });
    // https to a plain-http port: the handshake fails.
    const tls = await test((await webhookTo(`${base.replace('http:', 'https:')}/x`)).id);
    expect(tls).toMatchObject({ success: false, error: expect.stringMatching(/^tls: /) });
    expect(await test((await webhookTo(`${base}/test-redirect`)).id)).toMatchObject({ success: false, statusCode: 302 });
    // A 2xx with a huge body: read up to the cap, and a success.
    handlers.set('/test-huge', (_q, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      const pump = () => {
        while (sent < 100 && res.write(chunk)) sent++;
        if (sent < 100) res.once('drain', pump);
        else res.end();
      };
      pump();
    });
    expect(await test((await webhookTo(`${base}/test-huge`)).id)).toEqual({ success: true, statusCode: 200 });
  });

  it('an email past its deadline is abandoned, not sent late (the retry would send it twice)', async () => {
    // A server that answers every command, each after 300 ms: no silence reaches the old 500 ms socket
    // timeout, yet the whole exchange outlasts the 500 ms deadline.
    const late: string[] = [];
    let closed = 0;
    const slow = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onMailFrom: (_a, _s, cb) => void setTimeout(cb, 300),
      onRcptTo: (_a, _s, cb) => void setTimeout(cb, 300),
      onData(stream, _session, cb) {
        stream.on('data', () => {});
        stream.on('end', () => (late.push('mail'), cb()));
      },
      onClose: () => void closed++,
    });
    const port = await start(slow.server);
    try {
      await withTestApp({ SMTP_URL: `smtp://127.0.0.1:${port}`, NOTIFICATION_TIMEOUT_MS: '500' }, async (_t2, o) => {
        const res = await o.req({ method: 'POST', url: BASE, payload: { name: 'm', channelType: 'email', configuration: { recipients: ['late@example.com'] } } });
        const started = Date.now();
        const r = await o.req({ method: 'POST', url: `${BASE}/${res.json().data.id}/test` });
        expect(r.json().data).toEqual({ success: false, error: 'timeout: SMTP delivery failed (ETIMEDOUT)' });
        expect(Date.now() - started).toBeLessThan(1_500);
        // Long after the exchange would have ended: no mail reached the server, and our side hung up.
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        expect(late).toEqual([]);
        expect(closed).toBe(1);
      });
    } finally {
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });

  it('email without SMTP_URL fails with a clear reason; the delivery job records it and retries', async () => {
    await withTestApp({}, async (t2, o) => {
      const res = await o.req({ method: 'POST', url: BASE, payload: { name: 'm', channelType: 'email', configuration: { recipients: ['a@example.com'] } } });
      const id = res.json().data.id;
      const r = await o.req({ method: 'POST', url: `${BASE}/${id}/test` });
      expect(r.statusCode).toBe(200);
      expect(r.json().data).toEqual({ success: false, error: 'not_configured: SMTP_URL is not set: email channels cannot deliver' });
      await notify(t2.database.db, o.orgId, id, msg(), { now: t2.clock.now() });
      const runner = new JobRunner({ db: t2.database.db, log: quiet, clock: t2.clock });
      registerModuleWork(runner, t2.container.services);
      await runner.runOnce();
      const read = (await o.req({ method: 'GET', url: `${BASE}/${id}` })).json().data;
      expect(read.lastFailureReason).toBe('not_configured: SMTP_URL is not set: email channels cannot deliver');
      const jobs = rowsOf<{ status: string; attempts: number; last_error: string }>(
        await t2.database.db.execute(sql`select status, attempts, last_error from jobs where type = 'notification.deliver' and payload->>'channelId' = ${id}`),
      );
      expect(jobs).toEqual([{ status: 'pending', attempts: 1, last_error: expect.stringContaining('SMTP_URL is not set') }]);
    });
  });
});
