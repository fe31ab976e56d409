/**
 * One process of the service in its role (AGOV_ROLE): `all` serves the API and runs jobs, `api` only
 * serves, `worker` only runs jobs and schedules. Every role builds the same application (one set of
 * dependencies and one logger); only `api` and `all` listen. See docs/decisions.md, "Process roles".
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../app.js';
import type { Container } from '../container.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { SharedState } from '../lib/shared-state.js';
import { JobRunner } from './runner.js';
import type { Now } from './types.js';

export type Role = Config['AGOV_ROLE'];

/** What a role runs. */
export function roleRuns(role: Role) {
  return { api: role !== 'worker', jobs: role !== 'api' };
}

export interface ServiceProcess {
  role: Role;
  app: FastifyInstance;
  runner: JobRunner;
  /** Stops claiming and drains jobs, then closes the app (which flushes buffered usage). The caller closes state and database. */
  close(): Promise<void>;
}

export interface StartProcessOptions {
  config: Config;
  database: Database;
  state: SharedState;
  /** The container already built from them (main.ts); without one, buildApp assembles its own. */
  container?: Container;
  /** The audit checkpoint signer and verify batch size (passed to buildApp). */
  audit?: AppDeps['audit'];
  /** Registers job types and schedules before the runner starts (the domains' jobs, or a test's). */
  jobs?: (runner: JobRunner, app: FastifyInstance) => void;
  now?: Now;
}

/** Builds the app and the job runner for the configured role and starts the runner (listening is the caller's). */
export async function startProcess(opts: StartProcessOptions): Promise<ServiceProcess> {
  const { config, database, state } = opts;
  const runs = roleRuns(config.AGOV_ROLE);
  const app = await buildApp({ ...(opts.container ?? { config, database, state }), audit: opts.audit });
  const runner = new JobRunner({
    db: database.db,
    log: app.log,
    now: opts.now,
    runJobs: runs.jobs,
    pollIntervalMs: config.JOBS_POLL_INTERVAL_MS,
    concurrency: config.JOBS_CONCURRENCY,
    // PGlite has no other process to hear from; its enqueues wake the runner in-process.
    listenUrl: runs.jobs && database.kind === 'postgres' ? config.DATABASE_URL : undefined,
  });
  // Usage is buffered in THIS process's memory, so each instance flushes its own: a process-local
  // task, not a once-across-instances schedule (docs/decisions.md, "Background jobs").
  if (runs.api) runner.everyLocal('api-key-usage-flush', config.USAGE_FLUSH_INTERVAL_MS, () => app.deps.usage.flush());
  opts.jobs?.(runner, app);
  await app.ready();
  await runner.start();
  return {
    role: config.AGOV_ROLE,
    app,
    runner,
    async close() {
      await runner.stop(JOBS_SHUTDOWN_TIMEOUT_MS);
      await app.close();
    },
  };
}

// Below main.ts's 25 s forced exit, so the app still gets time to drain requests after the jobs.
const JOBS_SHUTDOWN_TIMEOUT_MS = 15_000;
