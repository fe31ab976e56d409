/**
 * The module contract: what each domain (src/domains/<name>/index.ts) offers the application. The
 * list in src/modules.ts is iterated by the API, the worker, the CLI and the tests; adding a
 * domain is one line there. Core knows nothing of HTTP: the routes plugin is typed loosely here
 * and registered by src/app.ts.
 */
import type { Config } from '../config.js';
import type { Database, Db } from '../db/client.js';
import type { SharedState } from '../lib/shared-state.js';
import type { ResponseCache } from '../lib/response-cache.js';
import type { AfterCommit } from './after-commit.js';
import type { Clock } from './clock.js';

/** What the container provides; each module declares the part it uses. */
export interface ModuleDeps {
  config: Config;
  database: Database;
  db: Db;
  state: SharedState;
  clock: Clock;
  afterCommit: AfterCommit;
  /** Per-organization cache of serialized list pages (src/lib/response-cache.ts). */
  responseCache: ResponseCache;
  /** Signs audit checkpoints, for the routes and the schedule alike (docs/decisions.md, "Audit checkpoints"). */
  auditSigner: CheckpointSigner;
  /** Entries (and checkpoints) read per batch when the audit chain is walked (default: the audit module's; tests make it small to cross pages). */
  auditVerifyPageSize?: number;
}

/**
 * An Ed25519 signer, seen from core (the audit module's AuditSigner has this shape): declared here
 * so that core imports no domain.
 */
export interface CheckpointSigner {
  /** Hex SHA-256 of the public key's DER (SPKI). */
  keyId: string;
  /** The public key as SPKI PEM. */
  publicKeyPem: string;
  /** Base64 signature of the UTF-8 bytes of `message`. */
  sign(message: string): string;
}

/**
 * Work run once per `everyMs` across all instances: `run` (registered as the job type
 * `schedule:<name>`, so it retries like any job) or the job type `job`.
 */
export type ScheduleDefinition = { name: string; everyMs: number } & ({ run(): Promise<void>; job?: never } | { job: string; run?: never });

/** A durable job type a module handles (src/jobs/): its handler runs on the roles that claim jobs. */
export interface JobTypeDefinition {
  type: string;
  handler: (job: { id: string; organizationId: string; type: string; payload: unknown; attempt: number; maxAttempts: number }) => Promise<void>;
  /** Lease and backoff (src/jobs/types.ts JobTypeOptions). */
  options?: { leaseMs?: number; baseDelayMs?: number; maxDelayMs?: number };
}

/** Where a process-local task reports (the app's pino logger fits). */
export interface TaskLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Work on THIS process's memory (a buffer of the API path): run every `everyMs` by each instance
 * that serves the API (src/jobs/process.ts, the runner's `everyLocal`), and once more when the app
 * closes (src/app.ts), so nothing buffered is lost on shutdown. `run` reports its own failures.
 */
export interface LocalTask {
  name: string;
  everyMs: number;
  run(log: TaskLogger): Promise<void>;
}

/** A Fastify plugin, seen from core: registered by src/app.ts under /api/v1. */
export type RoutesPlugin = (app: never, opts: never) => Promise<void>;

/** One domain: its routes, its services built from the dependencies it declares, its schedules and caches. */
export interface DomainModule<Name extends string = string, D extends keyof ModuleDeps = never, S = unknown> {
  name: Name;
  routes?: RoutesPlugin;
  /** Routes outside /api/v1 (the health probes). */
  rootRoutes?: RoutesPlugin;
  /** The dependencies `services` is built from (a subset of the container's). */
  needs: readonly D[];
  services(deps: Pick<ModuleDeps, D>): S;
  /** The schedules this module runs, built on its own services (run only in roles that run jobs). */
  schedules?: (services: S) => readonly ScheduleDefinition[];
  /** The job types this module handles, built on its own services (registered only in roles that run jobs). */
  jobTypes?: (services: S) => readonly JobTypeDefinition[];
  /** Process-local tasks over the module's in-memory state (see LocalTask), built on its own services. */
  localTasks?: (services: S) => readonly LocalTask[];
  /** Names of the caches this module owns or invalidates (pub/sub channels, response-cache scopes). */
  caches: readonly string[];
}

/** Declares a module, keeping its name and services' types. */
export function defineModule<Name extends string, D extends keyof ModuleDeps, S>(m: DomainModule<Name, D, S>) {
  return m;
}
