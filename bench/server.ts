/**
 * Child process of `npm run bench`: one server on a random free loopback port.
 *
 *   BENCH_MODE=app   the real application (buildApp): opens the database (PGlite in memory, or
 *                    DATABASE_URL), migrates, creates an organization with an admin key, listens.
 *   BENCH_MODE=bare  a bare Fastify route at BENCH_PATH answering the JSON in BENCH_BARE_BODY_FILE.
 *
 * When listening it prints one JSON line on stdout ({ port, key?, organizationId? }) and serves
 * until SIGTERM. The database is owned by this process, so the seeding happens here too.
 * BENCH_PGLITE_DIR: run PGlite on that directory instead of in memory.
 * Over the IPC channel, the message 'cpu' is answered with this process's process.cpuUsage().
 */
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import { parseConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { createOrganization } from '../src/domains/organizations/service.js';
import { memoryState, redisState } from '../src/lib/shared-state.js';
import { startProcess } from '../src/jobs/process.js';
import { assemble } from '../src/container.js';

const HOST = '127.0.0.1';

/** Starts the real application and answers it with the admin key of a fresh organization. */
async function startApp(): Promise<{ app: FastifyInstance; info: Record<string, unknown>; close: () => Promise<void> }> {
  const config = parseConfig(process.env);
  const dataDir = config.DATABASE_URL ? null : (process.env.BENCH_PGLITE_DIR ?? null);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir, poolSize: config.DATABASE_POOL_SIZE });
  await database.migrate();
  const state = config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState();
  // The server's own wiring (role all): the usage flush runs as in production.
  const proc = await startProcess(assemble({ config, database, state }));
  const app = proc.app;
  const { organization, key } = await createOrganization(database.db, { name: `Bench ${new Date().toISOString()}` });
  return {
    app,
    info: { key, organizationId: organization.id, database: database.describe, cache: state.kind },
    close: async () => {
      await proc.close();
      await state.close();
      await database.close();
    },
  };
}

/** Starts a bare Fastify server answering the recorded JSON body at the benchmarked path. */
async function startBare(): Promise<{ app: FastifyInstance; info: Record<string, unknown>; close: () => Promise<void> }> {
  const path = process.env.BENCH_PATH ?? '/api/v1/teams';
  const file = process.env.BENCH_BARE_BODY_FILE;
  const body: unknown = file ? JSON.parse(readFileSync(file, 'utf8')) : { data: [], meta: { total: 0, limit: 50, offset: 0 } };
  const app = Fastify({ logger: false });
  // No response schema and no cached string: JSON.stringify per request, like a plain Fastify handler.
  app.get(path, async () => body);
  return { app, info: {}, close: () => app.close() };
}

async function main() {
  const mode = process.env.BENCH_MODE;
  if (mode !== 'app' && mode !== 'bare') throw new Error('BENCH_MODE must be app or bare');
  const { app, info, close } = mode === 'app' ? await startApp() : await startBare();
  await app.listen({ host: HOST, port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port, ...info })}\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await close();
    } finally {
      process.exit(0);
    }
  };
  process.on('message', (m) => {
    if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
  });
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
