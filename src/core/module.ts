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
}

/** A durable background job a module handles (run by the job runner). */
export interface JobDefinition {
  name: string;
  handle(payload: unknown): Promise<void>;
}

/** A job started on a schedule, once across all instances. */
export interface ScheduleDefinition {
  name: string;
  job: string;
  everyMs: number;
}

/** A Fastify plugin, seen from core: registered by src/app.ts under /api/v1. */
export type RoutesPlugin = (app: never, opts: never) => Promise<void>;

/** One domain: its routes, its services built from the dependencies it declares, its background work and caches. */
export interface DomainModule<Name extends string = string, D extends keyof ModuleDeps = never, S = unknown> {
  name: Name;
  routes?: RoutesPlugin;
  /** Routes outside /api/v1 (the health probes). */
  rootRoutes?: RoutesPlugin;
  /** The dependencies `services` is built from (a subset of the container's). */
  needs: readonly D[];
  services(deps: Pick<ModuleDeps, D>): S;
  jobs: readonly JobDefinition[];
  schedules: readonly ScheduleDefinition[];
  /** Names of the caches this module owns or invalidates (pub/sub channels, response-cache scopes). */
  caches: readonly string[];
}

/** Declares a module, keeping its name and services' types. */
export function defineModule<Name extends string, D extends keyof ModuleDeps, S>(m: DomainModule<Name, D, S>) {
  return m;
}
