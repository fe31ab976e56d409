/**
 * The benchmarks' one way to start the real application in their child process: open the database
 * (PGlite in memory or in `dataDir`, or DATABASE_URL), migrate, connect the shared state (Redis when
 * REDIS_URL is set), build the app, and seed an organization with an admin key.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createOrganization } from '../src/domains/organizations/service.js';
import { startProcess } from '../src/jobs/process.js';
import { assemble } from '../src/container.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';

export interface BenchApp {
  app: FastifyInstance;
  database: Database;
  state: SharedState;
  organizationId: string;
  /** The organization's admin API key. */
  key: string;
  /** Stops the app (and its jobs), then the shared state and the database. */
  close(): Promise<void>;
}

/**
 * Starts the app on `env` (the process environment plus overrides). `jobs: true` starts it as the
 * server does (src/jobs/process.ts: the job runner, the usage flush and the modules' local tasks run
 * too); otherwise buildApp alone. `routes` adds the benchmark's own routes before the app is ready.
 */
export async function startBenchApp(opts: { env?: Record<string, string | undefined>; dataDir?: string | null; jobs?: boolean; routes?: (app: FastifyInstance) => void } = {}): Promise<BenchApp> {
  const config = parseConfig({ ...process.env, ...opts.env });
  const dataDir = config.DATABASE_URL ? null : (opts.dataDir ?? null);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir, poolSize: config.DATABASE_POOL_SIZE });
  await database.migrate();
  const state = config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState();
  const container = assemble({ config, database, state });
  const proc = opts.jobs ? await startProcess(container, { jobs: (_runner, app) => opts.routes?.(app) }) : undefined;
  const app = proc ? proc.app : await buildApp(container);
  if (!proc) opts.routes?.(app);
  const { organization, key } = await createOrganization(database.db, { name: `Bench ${new Date().toISOString()} ${process.pid}` });
  return {
    app,
    database,
    state,
    organizationId: organization.id,
    key,
    async close() {
      await (proc ? proc.close() : app.close());
      await state.close();
      await database.close();
    },
  };
}
