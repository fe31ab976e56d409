/**
 * The one place dependencies are built, for the API, the worker, the CLI and the tests:
 * configuration, database (migrated), shared state, clock, after-commit effects, caches, and every
 * module's services (src/modules.ts).
 */
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/client.js';
import { memoryState, redisState, type SharedState } from './lib/shared-state.js';
import { ResponseCache } from './lib/response-cache.js';
import { AfterCommit } from './core/after-commit.js';
import { systemClock, type Clock } from './core/clock.js';
import type { CheckpointSigner, ModuleDeps } from './core/module.js';
import { ephemeralSigner } from './domains/audit/signer.js';
import { buildServices, type Services } from './modules.js';
import type { EventType } from './domains/events/outbox.js';

export interface Container extends ModuleDeps {
  services: Services;
  /** Closes what the container opened (shared state, then the database). */
  close(): Promise<void>;
}

/** What a container is assembled from; the rest is built. */
export interface Infrastructure {
  config: Config;
  database: Database;
  state: SharedState;
  clock?: Clock;
  afterCommit?: AfterCommit;
  /**
   * Signs audit checkpoints (main.ts loads it: AUDIT_SIGNING_KEY or the data directory's key). Without
   * one (tests, embedders, the CLI) a key that dies with the container: checkpoints it did not sign
   * are then reported as signed by another key.
   */
  auditSigner?: CheckpointSigner;
  /** The audit chain walk's batch (default: the audit module's); tests make it small. */
  auditVerifyPageSize?: number;
}

/** Builds caches and services around an open database and shared state. */
export function assemble(infra: Infrastructure): Container {
  // Bound once the services exist: the webhooks module answers who subscribes (see ModuleDeps).
  let services: Services | undefined;
  const deps: ModuleDeps = {
    config: infra.config,
    database: infra.database,
    db: infra.database.db,
    state: infra.state,
    clock: infra.clock ?? systemClock,
    afterCommit: infra.afterCommit ?? new AfterCommit(),
    responseCache: new ResponseCache(infra.state),
    auditSigner: infra.auditSigner ?? ephemeralSigner(),
    auditVerifyPageSize: infra.auditVerifyPageSize,
    subscriptions: { wants: (orgId, type) => services!.webhooks.subscriptions.wants(orgId, type as EventType) },
  };
  services = buildServices(deps);
  return {
    ...deps,
    services,
    async close() {
      await infra.state.close();
      await infra.database.close();
    },
  };
}

/**
 * Opens the database (PostgreSQL when DATABASE_URL is set, else PGlite in `dataDir`, in memory
 * when null), applies migrations, connects the shared state (Redis when REDIS_URL is set) and
 * assembles the container. `state` and `clock` replace the configured ones (tests); `auditSigner`
 * is the server's checkpoint signer (an ephemeral one without it).
 */
export async function openContainer(
  config: Config,
  opts: { dataDir?: string | null; poolSize?: number; state?: SharedState; clock?: Clock; auditSigner?: CheckpointSigner } = {},
): Promise<Container> {
  const database = await openDatabase({
    url: config.DATABASE_URL,
    dataDir: opts.dataDir === undefined ? config.DATA_DIR : opts.dataDir,
    poolSize: opts.poolSize ?? config.DATABASE_POOL_SIZE,
  });
  await database.migrate();
  const state = opts.state ?? (config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState());
  return assemble({ config, database, state, clock: opts.clock, auditSigner: opts.auditSigner });
}
