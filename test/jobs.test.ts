/** The job runner on a real database (PGlite, or PostgreSQL when DATABASE_URL is set), with an injected clock. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { openDatabase, rowsOf, type Database, type Db } from '../src/db/client.js';
import { enqueue, JobRunner, listDeadJobs, type JobLogger } from '../src/jobs/index.js';
import { claimDue } from '../src/jobs/store.js';
import { createTestApp, testDatabaseUrl, type TestApp } from './helpers.js';

const quiet: JobLogger = { info: () => {}, warn: () => {}, error: () => {} };
const onPostgres = !!process.env.DATABASE_URL;

/** A movable clock, shared by the runners of one test. */
function clock(start = Date.parse('2030-01-15T10:00:00Z')) {
  let t = start;
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

/** A job type name no other test (or test file on the shared PostgreSQL) uses. */
const uniqueType = (name: string) => `test.${name}.${randomUUID().slice(0, 8)}`;

async function jobRows(db: Db, type: string) {
  return rowsOf<{ id: string; status: string; attempts: number; last_error: string | null; run_at: string | Date; locked_by: string | null }>(
    await db.execute(sql`select id, status, attempts, last_error, run_at, locked_by from jobs where type = ${type}`),
  );
}

let t: TestApp;
let db: Db;
beforeAll(async () => {
  t = await createTestApp();
  db = t.database.db;
});
afterAll(async () => t.close());

describe('enqueue', () => {
  it('writes the job in the caller transaction: a rollback leaves none, a commit leaves one', async () => {
    const type = uniqueType('tx');
    await expect(
      db.transaction(async (tx) => {
        await enqueue(tx, { type, payload: { n: 1 } });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await jobRows(db, type)).toHaveLength(0);
    await db.transaction(async (tx) => {
      await enqueue(tx, { type, payload: { n: 2 } });
    });
    expect(await jobRows(db, type)).toHaveLength(1);
  });

  it('ignores a repeat with the same idempotency key', async () => {
    const type = uniqueType('idem');
    const first = await enqueue(db, { type, idempotencyKey: 'k1' });
    const again = await enqueue(db, { type, idempotencyKey: 'k1' });
    expect(first.created).toBe(true);
    expect(again).toEqual({ id: null, created: false });
    expect(await jobRows(db, type)).toHaveLength(1);
  });
});

describe('retries', () => {
  it('backs off exponentially with jitter, then keeps the job dead with its last error', async () => {
    const type = uniqueType('fail');
    const c = clock();
    // random() = 1 takes the top of each jitter window, so the delays are exactly base·2^(n-1).
    const runner = new JobRunner({ db, log: quiet, clock: c, random: () => 0.999999 });
    let calls = 0;
    runner.register(type, async () => {
      calls += 1;
      throw new Error(`boom ${calls}`);
    }, { baseDelayMs: 1000, maxDelayMs: 60_000 });
    await enqueue(db, { type, maxAttempts: 3 }, c.now());

    expect(await runner.runOnce()).toBe(1);
    let [row] = await jobRows(db, type);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_error: 'Error: boom 1' });
    expect(new Date(row!.run_at).getTime() - c.now().getTime()).toBe(999); // ~1000 ms after the first failure

    c.advance(998);
    expect(await runner.runOnce()).toBe(0); // not due yet
    c.advance(1);
    expect(await runner.runOnce()).toBe(1);
    [row] = await jobRows(db, type);
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
    expect(new Date(row!.run_at).getTime() - c.now().getTime()).toBe(1999); // doubled

    c.advance(1999);
    expect(await runner.runOnce()).toBe(1);
    [row] = await jobRows(db, type);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, last_error: 'Error: boom 3', locked_by: null });

    c.advance(24 * 3600_000);
    expect(await runner.runOnce()).toBe(0); // dead jobs are kept, not run
    expect(calls).toBe(3);
    const snapshot = await runner.metrics();
    expect(snapshot.runs[type]).toMatchObject({ started: 3, failed: 2, dead: 1, succeeded: 0 });
    expect(snapshot.queue).toContainEqual({ type, status: 'dead', count: 1 });
    const dead = await listDeadJobs(db, { type });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ type, attempts: 3, lastError: 'Error: boom 3', organizationId: '00000000-0000-0000-0000-000000000000' });
  });

  it('deletes a job that succeeds and counts it', async () => {
    const type = uniqueType('ok');
    const c = clock();
    const runner = new JobRunner({ db, log: quiet, clock: c });
    const seen: unknown[] = [];
    runner.register<{ n: number }>(type, async (job) => {
      seen.push(job.payload.n);
    });
    const orgId = randomUUID();
    await enqueue(db, { type, payload: { n: 7 }, organizationId: orgId }, c.now());
    c.advance(250);
    expect(await runner.runOnce()).toBe(1);
    expect(seen).toEqual([7]);
    expect(await jobRows(db, type)).toHaveLength(0);
    expect((await runner.metrics()).runs[type]).toMatchObject({ started: 1, succeeded: 1, waitMsMax: 250 });
  });
});

describe('leases', () => {
  it('runs again a job whose worker died after claiming it, once the lease has ended', async () => {
    const type = uniqueType('lease');
    const c = clock();
    await enqueue(db, { type, maxAttempts: 2 }, c.now());
    // A worker claims it with a one-minute lease, then dies.
    expect(await claimDue(db, [type], 10, 'dead-worker', c.now(), new Date(c.now().getTime() + 60_000))).toHaveLength(1);

    const attempts: number[] = [];
    const runner = new JobRunner({ db, log: quiet, clock: c });
    runner.register(type, async (job) => {
      attempts.push(job.attempt);
    });
    c.advance(59_999);
    expect(await runner.runOnce()).toBe(0);
    c.advance(1);
    expect(await runner.runOnce()).toBe(1);
    expect(attempts).toEqual([2]);
    expect(await jobRows(db, type)).toHaveLength(0);
  });

  it('buries a job whose worker died on its last attempt, with a reason', async () => {
    const type = uniqueType('lease-last');
    const c = clock();
    await enqueue(db, { type, maxAttempts: 1 }, c.now());
    await claimDue(db, [type], 10, 'dead-worker', c.now(), new Date(c.now().getTime() + 1000));
    const runner = new JobRunner({ db, log: quiet, clock: c });
    runner.register(type, async () => {});
    c.advance(1000);
    expect(await runner.runOnce()).toBe(0);
    const [row] = await jobRows(db, type);
    expect(row?.status).toBe('dead');
    expect(row?.last_error).toMatch(/lease expired/);
  });
});

describe('schedules', () => {
  it('fire once per period across two runners', async () => {
    const name = uniqueType('sched');
    const c = clock();
    // On PostgreSQL the runners use separate pools on this file's database, like two instances.
    const other: Database | null = onPostgres ? await openDatabase({ url: await testDatabaseUrl(), poolSize: 3 }) : null;
    try {
      const fired: string[] = [];
      const make = (d: Db, id: string) => {
        const r = new JobRunner({ db: d, log: quiet, clock: c, id });
        r.schedule(name, { everyMs: 60_000 }, async (job) => {
          fired.push(`${id}@${(job.payload as { period: string }).period}`);
        });
        return r;
      };
      const a = make(db, 'a');
      const b = make(other?.db ?? db, 'b');
      const both = async () => {
        // Two passes so a job enqueued by one runner's pass is surely run within the round.
        for (let i = 0; i < 2; i++) await Promise.all([a.runOnce(), b.runOnce()]);
      };
      await both();
      expect(fired).toHaveLength(1);
      c.advance(30_000);
      await both();
      expect(fired).toHaveLength(1);
      c.advance(30_000);
      await both();
      await both();
      expect(fired).toHaveLength(2);
      expect(new Set(fired.map((f) => f.split('@')[1])).size).toBe(2);
    } finally {
      await other?.close();
    }
  });
});

describe('wake-up', () => {
  it('an enqueue in a transaction wakes an idle runner once: in-process on PGlite, through LISTEN alone on PostgreSQL', async () => {
    const type = uniqueType('wake');
    const dialect = new PgDialect();
    let claims = 0;
    // The runner's database, counting its claim statements: one per look for due jobs.
    const counting = new Proxy(db, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== 'execute') return typeof value === 'function' ? value.bind(target) : value;
        return (query: SQL) => {
          if (/skip locked/i.test(dialect.sqlToQuery(query).sql)) claims += 1;
          return value.call(target, query);
        };
      },
    });
    // A poll too slow to matter here: only a wake-up makes the runner look.
    const runner = new JobRunner({ db: counting, log: quiet, pollIntervalMs: 60_000, listenUrl: onPostgres ? await testDatabaseUrl() : undefined });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // The handler holds on until the end, so its completion (which also wakes the runner) is not counted.
    runner.register(type, async () => {
      started();
      await gate;
    });
    await runner.start();
    try {
      await vi.waitFor(() => expect(claims).toBe(1)); // the first look, at start
      claims = 0;
      // As a service does: in its transaction, which goes on a moment before it commits.
      await db.transaction(async (tx) => {
        await enqueue(tx, { type });
        await new Promise((r) => setTimeout(r, 100));
      });
      await running;
      await new Promise((r) => setTimeout(r, 300)); // time for a second wake-up (the notification) to arrive
      // The look the enqueue caused, then the refill after a batch that claimed a job: no second wake-up.
      expect(claims).toBe(2);
    } finally {
      release();
      await runner.stop();
    }
  });
});

describe('shutdown', () => {
  it('waits for a running handler before it resolves', async () => {
    const type = uniqueType('drain');
    const runner = new JobRunner({ db, log: quiet, pollIntervalMs: 20 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let finished = false;
    runner.register(type, async () => {
      started();
      await gate;
      finished = true;
    });
    await runner.start();
    await enqueue(db, { type });
    await running;
    let stopped = false;
    const stopping = runner.stop(60_000).then(() => (stopped = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    expect(await jobRows(db, type)).toHaveLength(0);
  });

  it('hands back the claim of a handler that outlives the shutdown bound', async () => {
    const type = uniqueType('abandon');
    const runner = new JobRunner({ db, log: quiet, pollIntervalMs: 20 });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    runner.register(type, async () => {
      started();
      await new Promise(() => {}); // never ends
    });
    await runner.start();
    await enqueue(db, { type });
    await running;
    await runner.stop(10);
    const [row] = await jobRows(db, type);
    expect(row).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });
  });
});

describe.skipIf(!onPostgres)('two runners on PostgreSQL', () => {
  it('never run the same job twice', async () => {
    const type = uniqueType('race');
    const second = await openDatabase({ url: await testDatabaseUrl(), poolSize: 5 });
    try {
      const runs = new Map<string, number>();
      const handler = async (job: { id: string }) => {
        await new Promise((r) => setImmediate(r));
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      };
      const a = new JobRunner({ db, log: quiet, concurrency: 8, id: 'a' });
      const b = new JobRunner({ db: second.db, log: quiet, concurrency: 8, id: 'b' });
      a.register(type, handler);
      b.register(type, handler);
      const N = 300;
      for (let i = 0; i < N; i += 50) {
        await db.transaction(async (tx) => {
          for (let j = i; j < i + 50; j++) await enqueue(tx, { type, payload: { j } });
        });
      }
      let ranA = 0;
      let ranB = 0;
      for (let round = 0; round < 200 && (await jobRows(db, type)).length > 0; round++) {
        const [x, y] = await Promise.all([a.runOnce(), b.runOnce()]);
        ranA += x;
        ranB += y;
      }
      expect(runs.size).toBe(N);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      expect(ranA + ranB).toBe(N);
      expect(ranA).toBeGreaterThan(0);
      expect(ranB).toBeGreaterThan(0);
    } finally {
      await second.close();
    }
  });
});
