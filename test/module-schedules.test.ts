/**
 * Modules declare their schedules; the job runner runs them (docs/decisions.md, "Module jobs and
 * schedules"): the audit module signs due chain heads with the container's signer at the container's
 * clock, and the traces module deletes traces past TRACE_RETENTION_DAYS (nothing when 0).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble } from '../src/container.js';
import { TestClock } from '../src/core/clock.js';
import { JobRunner, type JobLogger } from '../src/jobs/index.js';
import { registerModuleWork } from '../src/jobs/process.js';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

const quiet: JobLogger = { info: () => {}, warn: () => {}, error: () => {} };
const HOUR_MS = 3_600_000;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

/** A runner on the test database with every module's job types and schedules, driven by `clock`. */
function runnerOf(services: TestApp['container']['services'], clock: TestClock) {
  const runner = new JobRunner({ db: t.database.db, log: quiet, clock });
  registerModuleWork(runner, services);
  return runner;
}

describe('the audit module schedule', () => {
  it('signs the moved chain head with the container signer at the container clock; the routes verify with the same key', async () => {
    t.clock.set('2031-05-01T08:00:00.000Z');
    const org = await createOrg(t, 'Sched');
    const res = await org.req({ method: 'POST', url: '/api/v1/api-keys', payload: { name: 'k', environment: 'production' } });
    expect(res.statusCode, res.body).toBe(201);
    const before = (await org.req({ method: 'GET', url: '/api/v1/audit-logs/checkpoints' })).json();
    expect(before.meta.total).toBe(0);

    await runnerOf(t.container.services, t.clock).runOnce();

    const list = (await org.req({ method: 'GET', url: '/api/v1/audit-logs/checkpoints' })).json();
    expect(list.meta.total).toBe(1);
    expect(list.data[0]).toMatchObject({ keyId: t.container.auditSigner.keyId, signedAt: '2031-05-01T08:00:00.000Z' });
    const verify = (await org.req({ method: 'GET', url: '/api/v1/audit-logs/verify' })).json().data;
    expect(verify.valid).toBe(true);
    expect(verify.checkpoints).toMatchObject({ otherKeys: 0, bad: [], lastGood: { keyId: t.container.auditSigner.keyId } });
  });
});

describe('the traces module retention schedule', () => {
  const agentOf = async (o: TestOrg) => {
    const res = await o.req({
      method: 'POST', url: '/api/v1/agents',
      payload: { agentId: `bot-${randomUUID()}`, name: 'bot', type: 'autonomous', platform: 'custom', environment: 'staging' },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().data as { id: string };
  };
  const traceIdsOf = async (o: TestOrg) =>
    ((await o.req({ method: 'GET', url: '/api/v1/traces?limit=100' })).json().data as { traceId: string }[]).map((x) => x.traceId).sort();

  it('deletes nothing when TRACE_RETENTION_DAYS is 0, and the expired traces at the container clock when it is set', async () => {
    const org = await createOrg(t, 'Retain');
    const a = await agentOf(org);
    // January 2000 (the oldest timestamp accepted): no other test of this file writes traces that old.
    const at = (day: number) => new Date(Date.UTC(2000, 0, day)).toISOString();
    const ingest = await org.req({
      method: 'POST', url: '/api/v1/traces/ingest',
      payload: { traces: [1, 5, 20].map((d) => ({ traceId: `ret-${d}`, agentUuid: a.id, timestamp: at(d) })) },
    });
    expect(ingest.statusCode, ingest.body).toBe(202);

    // Retention off: the schedule runs and keeps everything. (After the first test's clock, so the
    // schedule, last run then, is due.)
    const clock = new TestClock('2040-01-15T00:00:00.000Z');
    const off = assemble({ config: { ...t.container.config, TRACE_RETENTION_DAYS: 0 }, database: t.database, state: t.state, clock });
    await runnerOf(off.services, clock).runOnce();
    expect(await traceIdsOf(org)).toEqual(['ret-1', 'ret-20', 'ret-5']);

    // An hour later (the schedule's next run), with a retention whose cutoff by the container's clock is 15 January 2000.
    clock.advance(HOUR_MS);
    const days = Math.floor((clock.now().getTime() - Date.UTC(2000, 0, 15)) / 86_400_000);
    const on = assemble({ config: { ...t.container.config, TRACE_RETENTION_DAYS: days }, database: t.database, state: t.state, clock });
    await runnerOf(on.services, clock).runOnce();
    expect(await traceIdsOf(org)).toEqual(['ret-20']);
  });
});
