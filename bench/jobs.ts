/**
 * Job runner throughput: enqueue N no-op jobs (100 per transaction), then time one runner (or
 * BENCH_RUNNERS of them, PostgreSQL only) claiming and completing them all. PGlite in memory, or
 * DATABASE_URL. Usage: node --import tsx bench/jobs.ts [N]. Figures in docs/decisions.md.
 */
import { randomUUID } from 'node:crypto';
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
console.log(
  `${database.kind}: enqueue ${Math.round((N / enqueueMs) * 1000)} jobs/s; claim+run+complete ${Math.round((N / runMs) * 1000)} jobs/s ` +
    `(${N} jobs, ${RUNNERS} runner(s), concurrency ${CONCURRENCY})`,
);
await database.close();
