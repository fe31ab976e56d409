/** Process roles (AGOV_ROLE): what each role runs, and an API-only and a worker-only instance sharing one PostgreSQL. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { parseConfig } from '../src/config.js';
import { assemble } from '../src/container.js';
import { TestClock } from '../src/core/clock.js';
import { openDatabase, rowsOf } from '../src/db/client.js';
import { createOrganization } from '../src/domains/organizations/service.js';
import { enqueue } from '../src/jobs/index.js';
import { startProcess } from '../src/jobs/process.js';
import { memoryState } from '../src/lib/shared-state.js';
import { openTestDatabase, testDatabaseUrl } from './helpers.js';

const DATABASE_URL = process.env.DATABASE_URL ?? '';

describe('AGOV_ROLE', () => {
  it('refuses a split role without PostgreSQL, with a message that says why', () => {
    expect(() => parseConfig({ AGOV_ROLE: 'worker' })).toThrow(/AGOV_ROLE: "worker" needs DATABASE_URL/);
    expect(() => parseConfig({ AGOV_ROLE: 'api' })).toThrow(/PGlite database serves one process/);
    expect(parseConfig({}).AGOV_ROLE).toBe('all');
    expect(parseConfig({ AGOV_ROLE: 'worker', DATABASE_URL: 'postgres://x@localhost/db' }).AGOV_ROLE).toBe('worker');
  });

  it('role all writes buffered API key usage from the runner (a process-local task, no timer of its own)', async () => {
    let t = Date.parse('2030-01-15T10:00:00Z');
    const config = parseConfig({ LOG_LEVEL: 'silent', DATABASE_URL, USAGE_FLUSH_INTERVAL_MS: '1000', JOBS_POLL_INTERVAL_MS: '20' });
    const database = await openDatabase({ url: config.DATABASE_URL, dataDir: null, poolSize: 3 });
    await database.migrate();
    const state = memoryState();
    const proc = await startProcess(assemble({ config, database, state, clock: { now: () => new Date(t) } }));
    try {
      const { key } = await createOrganization(database.db, { name: `Roles ${randomUUID().slice(0, 6)}` });
      const get = () => proc.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: { 'x-api-key': key } });
      expect((await get()).statusCode).toBe(200);
      t += 1000; // the flush is due: the runner's next tick writes it
      await vi.waitFor(async () => {
        const keys = (await get()).json().data as Array<{ usageCount: number }>;
        expect(keys[0]!.usageCount).toBeGreaterThanOrEqual(1);
      }, { timeout: 4000, interval: 25 });
    } finally {
      await proc.close();
      await state.close();
      await database.close();
    }
  });
});

describe('module schedules by role', () => {
  it('an API-only process registers no schedule and runs no job, even one queued for it; a worker does both', async () => {
    const database = await openTestDatabase();
    const state = memoryState();
    const clock = new TestClock('2030-01-15T10:00:00Z');
    const base = parseConfig({ LOG_LEVEL: 'silent', DATABASE_URL: DATABASE_URL && (await testDatabaseUrl()), JOBS_POLL_INTERVAL_MS: '20' });
    // parseConfig refuses a split role on PGlite (one process's database); what a role registers does not depend on it.
    const start = (role: 'api' | 'worker') => startProcess(assemble({ config: { ...base, AGOV_ROLE: role }, database, state, clock }));
    const scheduleNames = async () => rowsOf<{ name: string }>(await database.db.execute(sql`select name from job_schedules order by name`)).map((r) => r.name);
    const checkpoints = async (orgId: string) =>
      rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from audit_checkpoints where organization_id = ${orgId}`))[0]!.n;
    try {
      // The organization's audit head moved: the audit module's schedule would sign it.
      const { organization } = await createOrganization(database.db, { name: `Roles ${randomUUID().slice(0, 6)}` });
      // A module's schedule job, already queued (as another instance's schedule would enqueue it).
      await enqueue(database.db, { type: 'schedule:audit-checkpoints', payload: { schedule: 'audit-checkpoints' } });

      const api = await start('api');
      try {
        expect(await api.runner.runOnce()).toBe(0);
        await new Promise((r) => setTimeout(r, 100)); // a few of its polls
        expect(await scheduleNames()).toEqual([]);
        expect(await checkpoints(organization.id)).toBe(0);
        expect((await api.runner.metrics()).runs).toEqual({});
      } finally {
        await api.close();
      }

      const worker = await start('worker');
      try {
        await vi.waitFor(async () => expect(await checkpoints(organization.id)).toBe(1), { timeout: 5000, interval: 25 });
        expect(await scheduleNames()).toEqual(['audit-checkpoints', 'outbox-retention', 'policy-decision-counts-retention', 'policy-decision-retention', 'trace-retention', 'webhooks-dispatch-sweep', 'webhooks-retention']);
        await vi.waitFor(async () => expect((await worker.runner.metrics()).runs['schedule:audit-checkpoints']?.succeeded).toBeGreaterThanOrEqual(1));
      } finally {
        await worker.close();
      }
    } finally {
      await state.close();
      await database.close();
    }
  });
});

describe.skipIf(!DATABASE_URL)('an API-only and a worker-only instance on one PostgreSQL (needs DATABASE_URL)', () => {
  it('a job enqueued in the API instance transaction runs on the worker instance only', async () => {
    const type = `test.roles.${randomUUID().slice(0, 8)}`;
    const ranOn: string[] = [];
    let done!: () => void;
    const ran = new Promise<void>((r) => (done = r));
    const start = async (role: 'api' | 'worker') => {
      const config = parseConfig({ LOG_LEVEL: 'silent', DATABASE_URL, AGOV_ROLE: role, JOBS_POLL_INTERVAL_MS: '50' });
      const database = await openDatabase({ url: DATABASE_URL, poolSize: 3 });
      await database.migrate();
      const state = memoryState();
      const proc = await startProcess(assemble({ config, database, state }), {
        // Both instances know the job type; only the worker may claim it.
        jobs: (runner) =>
          runner.register(type, async () => {
            ranOn.push(role);
            done();
          }),
      });
      return { proc, close: async () => (await proc.close(), await state.close(), await database.close()) };
    };
    const api = await start('api');
    const worker = await start('worker');
    try {
      await api.proc.app.listen({ host: '127.0.0.1', port: 0 });
      expect(api.proc.app.server.listening).toBe(true);
      expect(worker.proc.app.server.listening).toBe(false);

      await api.proc.app.deps.db.transaction(async (tx) => {
        await enqueue(tx, { type, payload: { from: 'api' } });
      });
      await ran;
      await worker.proc.runner.runOnce(); // nothing left for a second run
      expect(ranOn).toEqual(['worker']);
      expect((await api.proc.runner.metrics()).runs[type]).toBeUndefined();
      expect((await worker.proc.runner.metrics()).runs[type]).toMatchObject({ started: 1, succeeded: 1 });
    } finally {
      await api.close();
      await worker.close();
    }
  });
});
