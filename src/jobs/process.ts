/**
 * One process of the service in its role (AGOV_ROLE): `all` serves the API and runs jobs, `api` only
 * serves, `worker` only runs jobs and schedules. Every role builds the same application (one set of
 * dependencies and one logger); only `api` and `all` listen. See docs/decisions.md, "Process roles".
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.js';
import type { Container } from '../container.js';
import type { Config } from '../config.js';
import type { TaskLogger } from '../core/module.js';
import { withOwnServices, type Services } from '../modules.js';
import { JobRunner } from './runner.js';

export type Role = Config['AGOV_ROLE'];

/** What a role runs. */
export function roleRuns(role: Role) {
  return { api: role !== 'worker', jobs: role !== 'api' };
}

export interface ServiceProcess {
  role: Role;
  app: FastifyInstance;
  runner: JobRunner;
  /** Stops claiming and drains jobs, then closes the app (which flushes buffered usage). The caller closes the container. */
  close(): Promise<void>;
}

/** Registers every module's job types and schedules (src/modules.ts), each built on that module's services. */
export function registerModuleWork(runner: JobRunner, services: Services) {
  for (const { module: m, own } of withOwnServices(services)) {
    for (const j of m.jobTypes?.(own) ?? []) runner.register(j.type, j.handler, j.options);
    for (const s of m.schedules?.(own) ?? []) runner.schedule(s.name, { everyMs: s.everyMs }, s.job ?? s.run);
  }
}

/** Registers every module's process-local tasks (src/core/module.ts, LocalTask) on this instance's runner. */
export function registerModuleLocalTasks(runner: JobRunner, services: Services, log: TaskLogger) {
  for (const { module: m, own } of withOwnServices(services)) {
    for (const t of m.localTasks?.(own) ?? []) runner.everyLocal(t.name, t.everyMs, () => t.run(log));
  }
}

/**
 * Builds the app and the job runner on `container` (its configuration's role, its clock) and starts
 * the runner; listening is the caller's. `jobs` registers a test's job types and schedules before the
 * runner starts (the modules' own are registered here).
 */
export async function startProcess(container: Container, opts: { jobs?: (runner: JobRunner, app: FastifyInstance) => void } = {}): Promise<ServiceProcess> {
  const { config, database } = container;
  const runs = roleRuns(config.AGOV_ROLE);
  const app = await buildApp(container);
  const runner = new JobRunner({
    db: database.db,
    log: app.log,
    clock: container.clock,
    runJobs: runs.jobs,
    pollIntervalMs: config.JOBS_POLL_INTERVAL_MS,
    concurrency: config.JOBS_CONCURRENCY,
    // PGlite has no other process to hear from; its enqueues wake the runner in-process.
    listenUrl: runs.jobs && database.kind === 'postgres' ? config.DATABASE_URL : undefined,
  });
  // Usage is buffered in THIS process's memory, so each instance flushes its own: a process-local
  // task, not a once-across-instances schedule (docs/decisions.md, "Background jobs").
  if (runs.api) runner.everyLocal('api-key-usage-flush', config.USAGE_FLUSH_INTERVAL_MS, () => app.deps.usage.flush());
  // The modules' buffers (the policy decision log) are process memory too: the same rule.
  if (runs.api) registerModuleLocalTasks(runner, container.services, app.log);
  // The modules' schedules belong to the roles that claim jobs; an API-only instance only enqueues.
  if (runs.jobs) registerModuleWork(runner, container.services);
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
