/**
 * Child process of the ingest and trace-query benchmarks: opens a database (PGlite in memory, or DATABASE_URL), migrates, seeds an
 * organization, and serves either the real app or a bare Fastify route on a loopback port. It
 * reports `{ port, key, orgId }` over IPC and runs baseline work (a raw multi-row INSERT through the
 * same driver) on request, so app and baseline share process, driver and database.
 */
import Fastify from 'fastify';
import { traces } from '../src/db/schema/index.js';
import { startBenchApp } from './start-app.js';
import { rawTraceRows } from './data.js';

const send = (m: unknown) => process.send!(m);

async function bare() {
  const app = Fastify({ logger: false });
  const body = { data: Array.from({ length: 20 }, (_, i) => ({ id: `team-${i}`, name: `Team ${i}`, memberCount: i })), meta: { total: 20, limit: 50, offset: 0 } };
  app.get('/bare', async () => body);
  await app.listen({ port: 0, host: '127.0.0.1' });
  send({ port: (app.server.address() as { port: number }).port });
}

async function real() {
  const { app, database, organizationId, key } = await startBenchApp({
    env: {
      LOG_LEVEL: 'silent',
      RATE_LIMIT_CONTROL_PER_MINUTE: '100000000',
      RATE_LIMIT_INGEST_PER_MINUTE: '100000000',
      ENFORCEMENT_RATE_LIMIT_PER_MINUTE: '100000000',
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('message', async (m: { cmd: string; [k: string]: unknown }) => {
    if (m.cmd === 'raw-insert') {
      // The baseline: the same rows as multi-row INSERTs through the same driver, same concurrency.
      const batches = rawTraceRows(organizationId, m.agentUuid as string, m.prefix as string, m.batches as number, m.batchSize as number);
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: m.concurrency as number }, async () => {
          while (next < batches.length) await database.db.insert(traces).values(batches[next++]);
        }),
      );
      send({ ms: performance.now() - started });
    } else if (m.cmd === 'mem') {
      const { rss, heapUsed } = process.memoryUsage();
      send({ rss, heapUsed });
    } else if (m.cmd === 'sql') {
      const started = performance.now();
      await database.db.execute(m.sql as never);
      send({ ms: performance.now() - started });
    }
  });
  send({ port: (app.server.address() as { port: number }).port, key, orgId: organizationId, db: database.kind });
}

process.on('SIGINT', () => process.exit(0));
await (process.env.BENCH_MODE === 'bare' ? bare() : real());
