/**
 * Job runner throughput: enqueue N no-op jobs (100 per transaction), then time one runner (or
 * BENCH_RUNNERS of them, PostgreSQL only) claiming and completing them all. PGlite in memory, or
 * DATABASE_URL. Usage: node --import tsx bench/jobs.ts [N]. Figures in docs/decisions.md.
 * Baseline, same process and driver: the bare minimum of a queue in raw SQL on a scratch table (one
 * INSERT per row, 100 per transaction; then drain with DELETE … FOR UPDATE SKIP LOCKED, 10 at a time).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../src/db/client.js';
import { enqueue, JobRunner } from '../src/jobs/index.js';

const N = Number(process.argv[2] ?? 2000);
const RUNNERS = Number(process.env.BENCH_RUNNERS ?? 1);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

const database = await openDatabase({ url: process.env.DATABASE_URL, dataDir: null, poolSize: 10 });
await database.migrate();
const type = `bench.${randomUUID().slice(0, 8)}`;
const t0 = performance.now();
for (let i = 0; i < N; i += 100) {
  await database.db.transaction(async (tx) => {
    for (let j = i; j < Math.min(N, i + 100); j++) await enqueue(tx, { type, payload: { j } });
  });
}
const enqueueMs = performance.now() - t0;

let done = 0;
let finish!: () => void;
const finished = new Promise<void>((r) => (finish = r));
const runners = Array.from({ length: RUNNERS }, () => {
  const r = new JobRunner({ db: database.db, log: quiet, concurrency: CONCURRENCY, pollIntervalMs: 50 });
  r.register(type, async () => {
    if (++done === N) finish();
  });
  return r;
});
const t1 = performance.now();
await Promise.all(runners.map((r) => r.start()));
await finished;
const runMs = performance.now() - t1;
await Promise.all(runners.map((r) => r.stop()));

// Baseline: raw SQL doing the least a durable queue must do.
const db = database.db;
await db.execute(sql`create temp table bench_raw (id bigserial primary key, payload jsonb not null)`);
const t2 = performance.now();
for (let i = 0; i < N; i += 100) {
  await db.transaction(async (tx) => {
    for (let j = i; j < Math.min(N, i + 100); j++) await tx.execute(sql`insert into bench_raw (payload) values (${JSON.stringify({ j })}::jsonb)`);
  });
}
const rawEnqueueMs = performance.now() - t2;
const t3 = performance.now();
for (;;) {
  const r = (await db.execute(sql`delete from bench_raw where id in (select id from bench_raw order by id limit 10 for update skip locked) returning id`)) as unknown as { rows: unknown[] };
  if (r.rows.length === 0) break;
}
const rawRunMs = performance.now() - t3;

const rate = (ms: number) => Math.round((N / ms) * 1000);
console.log(`${database.kind}: ${N} jobs, ${RUNNERS} runner(s), concurrency ${CONCURRENCY}`);
console.log(`  enqueue            runner ${rate(enqueueMs)} jobs/s   raw INSERT ${rate(rawEnqueueMs)} rows/s   ratio ${(rawEnqueueMs / enqueueMs).toFixed(2)}`);
console.log(`  claim+run+complete runner ${rate(runMs)} jobs/s   raw DELETE…SKIP LOCKED ${rate(rawRunMs)} rows/s   ratio ${(rawRunMs / runMs).toFixed(2)}`);
await database.close();
